package openstack

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"

	"github.com/gophercloud/gophercloud/v2"
)

// A Volume is a Cinder volume: a member's boot volume.
type Volume struct {
	ID       string            `json:"id"`
	Name     string            `json:"name"`
	Status   string            `json:"status"`
	Size     int               `json:"size"`
	Metadata map[string]string `json:"metadata"`
}

// VolumeSettings are what a boot volume is made with: the image it holds, its size, and the
// metadata that ties it to its owner (Cinder takes it in the create call, so no volume is
// ever made that a listing by that metadata cannot find).
type VolumeSettings struct {
	Name, ImageID, Description string
	SizeGiB                    int
	Metadata                   map[string]string
}

// Volumes is the part of Cinder's API that makes members' boot volumes.
type Volumes interface {
	// ListVolumesByMetadata returns the project's volumes whose metadata has key=value.
	ListVolumesByMetadata(ctx context.Context, key, value string) ([]Volume, error)
	// CreateVolume makes a volume from an image (Cinder makes it in the background).
	CreateVolume(ctx context.Context, s VolumeSettings) (*Volume, error)
	// DeleteVolume deletes a volume (in the background); one that is gone is not an error.
	DeleteVolume(ctx context.Context, id string) error
}

type cinder struct{ c *gophercloud.ServiceClient }

var _ Volumes = &cinder{}

func (c *cinder) ListVolumesByMetadata(ctx context.Context, key, value string) ([]Volume, error) {
	filter, err := json.Marshal(map[string]string{key: value})
	if err != nil {
		return nil, err
	}
	q := url.Values{"metadata": []string{string(filter)}}
	var body struct {
		Volumes []Volume `json:"volumes"`
	}
	_, err = c.c.Get(ctx, c.c.ServiceURL("volumes", "detail")+"?"+q.Encode(), &body, &gophercloud.RequestOpts{OkCodes: []int{http.StatusOK}})
	return body.Volumes, err
}

func (c *cinder) CreateVolume(ctx context.Context, s VolumeSettings) (*Volume, error) {
	req := map[string]any{"volume": map[string]any{
		"name": s.Name, "description": s.Description, "size": s.SizeGiB, "imageRef": s.ImageID, "metadata": s.Metadata,
	}}
	var body struct {
		Volume Volume `json:"volume"`
	}
	if _, err := c.c.Post(ctx, c.c.ServiceURL("volumes"), req, &body, &gophercloud.RequestOpts{OkCodes: []int{http.StatusAccepted}}); err != nil {
		return nil, err
	}
	return &body.Volume, nil
}

func (c *cinder) DeleteVolume(ctx context.Context, id string) error {
	_, err := c.c.Delete(ctx, c.c.ServiceURL("volumes", id), &gophercloud.RequestOpts{OkCodes: []int{http.StatusAccepted}})
	if IsNotFound(err) {
		return nil
	}
	return err
}

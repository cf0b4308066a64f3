package openstack

import "encoding/json"

// neutronMessage extracts the message of a Neutron fault body
// ({"NeutronError": {"type": ..., "message": ...}}), or returns the body as is.
func neutronMessage(body []byte) string {
	var f struct {
		NeutronError struct {
			Message string `json:"message"`
		} `json:"NeutronError"`
	}
	if json.Unmarshal(body, &f) == nil && f.NeutronError.Message != "" {
		return f.NeutronError.Message
	}
	const max = 300
	if len(body) > max {
		return string(body[:max]) + "..."
	}
	return string(body)
}

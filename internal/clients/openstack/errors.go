package openstack

import "encoding/json"

// apiMessage extracts the message of an OpenStack fault body: Neutron's
// ({"NeutronError": {"type": ..., "message": ...}}) and Nova's, whose one key names the fault
// ({"forbidden": {"code": 403, "message": ...}}). Any other body is returned as is, cut short.
func apiMessage(body []byte) string {
	var f map[string]struct {
		Message string `json:"message"`
	}
	if json.Unmarshal(body, &f) == nil && len(f) == 1 {
		for _, v := range f {
			if v.Message != "" {
				return v.Message
			}
		}
	}
	const max = 300
	if len(body) > max {
		return string(body[:max]) + "..."
	}
	return string(body)
}

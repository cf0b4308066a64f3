package securitygroupattachment

import (
	"fmt"
	"regexp"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/stackservices/provider-stackservices/apis/network/v1alpha1"
)

const providerIDPrefix = "openstack://"

var uuidPattern = regexp.MustCompile(`^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$`)

// serverOfNode maps a node to the Nova server it runs on: the OpenStack cloud provider's
// providerID first (openstack:///<uuid>, or openstack://<region>/<uuid>), then the SMBIOS
// system UUID, which Nova sets to the instance UUID. It never guesses from names.
func serverOfNode(n corev1.Node) (string, error) {
	if pid := n.Spec.ProviderID; pid != "" {
		if !strings.HasPrefix(pid, providerIDPrefix) {
			return "", fmt.Errorf("spec.providerID %q is not an OpenStack provider ID (%s/<server uuid>)", pid, providerIDPrefix)
		}
		rest := strings.TrimPrefix(pid, providerIDPrefix)
		id := strings.ToLower(rest[strings.LastIndex(rest, "/")+1:])
		if !uuidPattern.MatchString(id) {
			return "", fmt.Errorf("spec.providerID %q does not end in a server UUID", pid)
		}
		return id, nil
	}
	if id := strings.ToLower(n.Status.NodeInfo.SystemUUID); id != "" {
		if !uuidPattern.MatchString(id) {
			return "", fmt.Errorf("status.nodeInfo.systemUUID %q is not a UUID", id)
		}
		return id, nil
	}
	return "", fmt.Errorf("the node has neither spec.providerID nor status.nodeInfo.systemUUID")
}

// targets are the servers an attachment wants the group on, with the node each came from.
type targets struct {
	servers   map[string]string // server ID -> node name ("" for explicit server IDs)
	unmatched []v1alpha1.UnmatchedNode
}

// resolveTargets maps the selected nodes to servers and adds the explicit server IDs.
func resolveTargets(nodes []corev1.Node, serverIDs []string) targets {
	t := targets{servers: map[string]string{}}
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].Name < nodes[j].Name })
	for _, n := range nodes {
		id, err := serverOfNode(n)
		if err != nil {
			t.unmatched = append(t.unmatched, v1alpha1.UnmatchedNode{NodeName: n.Name, Reason: err.Error()})
			continue
		}
		t.servers[id] = n.Name
	}
	for _, id := range serverIDs {
		id = strings.ToLower(id)
		if _, ok := t.servers[id]; !ok {
			t.servers[id] = ""
		}
	}
	return t
}

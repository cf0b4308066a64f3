package openstack

import (
	"fmt"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/stackservices/provider-stackservices/internal/machines"
)

// Where a member's files live on its server.
const (
	pkiDir   = "/etc/etcd/pki"
	dataDir  = "/var/lib/etcd"
	unitName = "etcd-member.service"
	unitPath = "/etc/systemd/system/" + unitName

	// MaxUserData is Nova's limit on user-data (64 KiB, before base64). A member's is a
	// few KiB: three PEM files and a unit.
	MaxUserData = 65535

	errFmtUserDataSize = "the member's user-data is %d bytes, more than Nova takes (%d)"
)

// cloudConfig is the part of cloud-init's #cloud-config the members use.
type cloudConfig struct {
	WriteFiles []cloudFile `json:"write_files"`
	RunCmd     [][]string  `json:"runcmd"`
}

type cloudFile struct {
	Path        string `json:"path"`
	Permissions string `json:"permissions"`
	Owner       string `json:"owner"`
	Content     string `json:"content"`
}

// userData is the #cloud-config that makes a server run its member: the cluster's CA
// certificate, the member's own certificate and key (never the CA's key: a member cannot sign
// anything), a systemd unit that runs etcd from the image with the member's flags, and the
// commands that start it. The unit restarts etcd if it exits, and starts it at every boot.
func userData(name, address, etcdPath string, cfg machines.MemberConfig) ([]byte, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	bin := strings.ReplaceAll(etcdPath, "{version}", strings.TrimPrefix(cfg.Version, "v"))
	args := cfg.Args(name, peerURL(address), clientURL(address), machines.MemberPaths{
		DataDir: dataDir, CA: pkiDir + "/ca.crt", Cert: pkiDir + "/member.crt", Key: pkiDir + "/member.key",
	})
	unit := fmt.Sprintf(`[Unit]
Description=etcd member %s (provider-stackservices)
Wants=network-online.target
After=network-online.target

[Service]
Type=simple
ExecStart=%s %s
Restart=always
RestartSec=5
LimitNOFILE=65536

[Install]
WantedBy=multi-user.target
`, name, bin, strings.Join(args, " "))
	cc := cloudConfig{
		WriteFiles: []cloudFile{
			{Path: pkiDir + "/ca.crt", Permissions: "0644", Owner: "root:root", Content: string(cfg.CA)},
			{Path: pkiDir + "/member.crt", Permissions: "0644", Owner: "root:root", Content: string(cfg.Cert)},
			{Path: pkiDir + "/member.key", Permissions: "0600", Owner: "root:root", Content: string(cfg.Key)},
			{Path: unitPath, Permissions: "0644", Owner: "root:root", Content: unit},
		},
		RunCmd: [][]string{
			{"mkdir", "-p", "-m", "0700", dataDir},
			{"systemctl", "daemon-reload"},
			{"systemctl", "enable", "--now", unitName},
		},
	}
	body, err := yaml.Marshal(cc)
	if err != nil {
		return nil, err
	}
	out := append([]byte("#cloud-config\n"), body...)
	if len(out) > MaxUserData {
		return nil, fmt.Errorf(errFmtUserDataSize, len(out), MaxUserData)
	}
	return out, nil
}

func peerURL(address string) string   { return "https://" + hostPort(address, "2380") }
func clientURL(address string) string { return "https://" + hostPort(address, "2379") }

func hostPort(address, port string) string {
	if strings.Contains(address, ":") {
		return "[" + address + "]:" + port
	}
	return address + ":" + port
}

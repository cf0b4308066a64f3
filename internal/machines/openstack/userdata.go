package openstack

import (
	_ "embed" // The member's start script.
	"fmt"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/stackservices/provider-stackservices/internal/machines"
)

// Where a member's files live on its server.
const (
	etcDir     = "/etc/etcd"
	pkiDir     = etcDir + "/pki"
	dataDir    = "/var/lib/etcd"
	scriptPath = etcDir + "/member.sh"
	releaseEnv = etcDir + "/release.env"
	restoreEnv = etcDir + "/restore.env"
	unitName   = "etcd-member.service"
	unitPath   = "/etc/systemd/system/" + unitName

	// MaxUserData is Nova's limit on user-data (64 KiB, before base64). A member's is a
	// few KiB: three PEM files, a script and a unit.
	MaxUserData = 65535

	errFmtUserDataSize = "the member's user-data is %d bytes, more than Nova takes (%d)"
)

// memberScript runs before etcd at each start of the unit: it downloads and checks the
// release (etcdReleaseURL) and the snapshot of a restore when there are any, then execs etcd.
//
//go:embed member.sh
var memberScript string

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

// member is what a server's user-data is made of.
type member struct {
	Name, Address string
	// EtcdPath is where the image has etcd ({version} stands for the version).
	EtcdPath string
	// Release, when set, is downloaded into EtcdPath's directory if etcd is not there.
	Release *Release
	Config  machines.MemberConfig
}

// userData is the #cloud-config that makes a server run its member: the cluster's CA
// certificate, the member's own certificate and key (never the CA's key: a member cannot sign
// anything), a systemd unit that runs etcd with the member's flags through the member
// script, and the commands that start it. The unit restarts etcd if it exits, and starts it at
// every boot. A restore adds what the script needs to fetch and check the snapshot: a
// pre-signed URL that reads that one object for a short while, its size and SHA-256, never S3
// credentials and never an age identity (user-data outlives the restore, in Nova and in the
// server's metadata service). That file is 0600 and the script removes it once the data is
// restored.
func userData(m member) ([]byte, error) {
	cfg := m.Config
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	bin := strings.ReplaceAll(m.EtcdPath, "{version}", strings.TrimPrefix(cfg.Version, "v"))
	peer := peerURL(m.Address)
	args := cfg.Args(m.Name, peer, clientURL(m.Address), machines.MemberPaths{
		DataDir: dataDir, CA: pkiDir + "/ca.crt", Cert: pkiDir + "/member.crt", Key: pkiDir + "/member.key",
	})
	unit := fmt.Sprintf(`[Unit]
Description=etcd member %s (provider-stackservices)
Wants=network-online.target
After=network-online.target

[Service]
Type=simple
ExecStart=/bin/sh %s %s %s
Restart=always
RestartSec=5
LimitNOFILE=65536

[Install]
WantedBy=multi-user.target
`, m.Name, scriptPath, bin, strings.Join(args, " "))
	files := []cloudFile{
		{Path: pkiDir + "/ca.crt", Permissions: "0644", Owner: "root:root", Content: string(cfg.CA)},
		{Path: pkiDir + "/member.crt", Permissions: "0644", Owner: "root:root", Content: string(cfg.Cert)},
		{Path: pkiDir + "/member.key", Permissions: "0600", Owner: "root:root", Content: string(cfg.Key)},
		{Path: scriptPath, Permissions: "0755", Owner: "root:root", Content: memberScript},
	}
	if r := m.Release; r != nil {
		files = append(files, cloudFile{Path: releaseEnv, Permissions: "0644", Owner: "root:root", Content: shellEnv(
			"ETCD_RELEASE_URL", r.URL,
			"ETCD_RELEASE_SHA256", r.SHA256,
		)})
	}
	if r := cfg.Restore; r != nil {
		bump := ""
		if r.BumpRevision > 0 {
			bump = "--bump-revision=" + strconv.FormatUint(r.BumpRevision, 10) + " --mark-compacted"
		}
		files = append(files, cloudFile{Path: restoreEnv, Permissions: "0600", Owner: "root:root", Content: shellEnv(
			"ETCD_RESTORE_URL", r.URL,
			"ETCD_RESTORE_SIZE", strconv.FormatInt(r.Size, 10),
			"ETCD_RESTORE_SHA256", r.SHA256,
			"ETCD_RESTORE_NAME", m.Name,
			"ETCD_RESTORE_INITIAL_CLUSTER", cfg.InitialCluster,
			"ETCD_RESTORE_INITIAL_CLUSTER_TOKEN", cfg.InitialClusterToken,
			"ETCD_RESTORE_PEER_URL", peer,
			"ETCD_RESTORE_BUMP", bump,
		)})
	}
	files = append(files, cloudFile{Path: unitPath, Permissions: "0644", Owner: "root:root", Content: unit})
	cc := cloudConfig{
		WriteFiles: files,
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

// shellEnv is a file the member script sources: NAME='value' lines, every value quoted for
// sh whatever it holds.
func shellEnv(pairs ...string) string {
	var b strings.Builder
	for i := 0; i+1 < len(pairs); i += 2 {
		b.WriteString(pairs[i] + "=" + shellQuote(pairs[i+1]) + "\n")
	}
	return b.String()
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func peerURL(address string) string   { return "https://" + hostPort(address, "2380") }
func clientURL(address string) string { return "https://" + hostPort(address, "2379") }

func hostPort(address, port string) string {
	if strings.Contains(address, ":") {
		return "[" + address + "]:" + port
	}
	return address + ":" + port
}

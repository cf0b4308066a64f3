package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/stackservices/provider-stackservices/apis/common"
)

// Keys of an EtcdCluster's connection Secret: what etcdctl and clientv3 need.
const (
	// ConnectionEndpoints is a comma-separated list of the voting members' client URLs.
	ConnectionEndpoints = "endpoints"
	ConnectionCACert    = "ca.crt"
	ConnectionTLSCert   = "tls.crt"
	ConnectionTLSKey    = "tls.key"
)

// MachineType says where the members of a cluster run.
type MachineType string

// Machine types.
const (
	// MachinesLocal runs members as processes on the provider's own host, each on its own
	// loopback address. For development and tests: the provider must be started with
	// --enable-local-machines.
	MachinesLocal MachineType = "Local"
	// MachinesOpenStack runs every member on a Nova server of its own, on a Neutron port made
	// first (its fixed IP is the member's address), booted with cloud-init user-data that
	// writes the member's certificate and configuration and starts etcd under systemd.
	MachinesOpenStack MachineType = "OpenStack"
)

// Server group policies of OpenStack machines.
const (
	ServerGroupSoftAntiAffinity = "soft-anti-affinity"
	ServerGroupAntiAffinity     = "anti-affinity"
)

// Machines say where members run.
// +kubebuilder:validation:XValidation:rule="self.type != 'OpenStack' || has(self.openstack)",message="machines.type OpenStack needs machines.openstack (flavor, image, network)"
// +kubebuilder:validation:XValidation:rule="self.type == 'OpenStack' || !has(self.openstack)",message="machines.openstack is only for machines.type OpenStack"
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.openstack) || !has(self.openstack) || self.openstack == oldSelf.openstack",message="machines.openstack is immutable: members are placed where the cluster was created"
type Machines struct {
	// Type of machine every member runs on. Local: processes on the provider's host (the
	// provider must run with --enable-local-machines; packaged deployments have it off).
	// OpenStack: a Nova server per member, in the project of the resource's ProviderConfig.
	// +kubebuilder:validation:Enum=Local;OpenStack
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="machines.type is immutable: members cannot move to another kind of machine"
	Type MachineType `json:"type"`

	// OpenStack says how members' servers are made (type OpenStack).
	// +optional
	OpenStack *OpenStackMachines `json:"openstack,omitempty"`
}

// MachineType is the type of the cluster's machines, empty while it names none.
func (p *EtcdClusterParameters) MachineType() MachineType {
	if p.Machines == nil {
		return ""
	}
	return p.Machines.Type
}

// OpenStackMachines place members on Nova servers.
// +kubebuilder:validation:XValidation:rule="has(self.network) != has(self.subnet)",message="name the members' network or their subnet, exactly one"
// +kubebuilder:validation:XValidation:rule="!has(self.etcdReleaseURL) || !has(self.etcdPath) || self.etcdPath.matches('^(/[A-Za-z0-9_-][A-Za-z0-9._-]*)*/[A-Za-z0-9._-]*[{]version[}][A-Za-z0-9._-]*/[A-Za-z0-9_-][A-Za-z0-9._-]*$')",message="with etcdReleaseURL, etcdPath's directory must name the version, as /opt/etcd-releases/v{version}/etcd: a server unpacks each release into a directory of its own, and replaces that directory"
type OpenStackMachines struct {
	// Flavor of the servers, by name or ID.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=255
	Flavor string `json:"flavor"`

	// Image of the servers, by name or ID. It must run cloud-init and systemd, and hold etcd
	// at etcdPath (see there).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=255
	Image string `json:"image"`

	// Network the members' ports are made on (name or ID); the port gets an address of one
	// of its subnets.
	// +kubebuilder:validation:MaxLength=255
	// +optional
	Network *string `json:"network,omitempty"`

	// Subnet the members' addresses come from (name or ID).
	// +kubebuilder:validation:MaxLength=255
	// +optional
	Subnet *string `json:"subnet,omitempty"`

	// AvailabilityZones members are spread over: each new member goes to the zone with the
	// fewest members of the cluster. Empty: Nova's default zone.
	// +kubebuilder:validation:MaxItems=7
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=255
	// +listType=set
	// +optional
	AvailabilityZones []string `json:"availabilityZones,omitempty"`

	// ServerGroupPolicy spreads members over hosts: soft-anti-affinity (the default) prefers
	// different hosts, anti-affinity requires them (a member that finds no free host fails
	// with Nova's "No valid host").
	// +kubebuilder:validation:Enum=soft-anti-affinity;anti-affinity
	// +kubebuilder:default=soft-anti-affinity
	// +optional
	ServerGroupPolicy string `json:"serverGroupPolicy,omitempty"`

	// KeyPair to put on the servers (for a person's SSH access), by name.
	// +kubebuilder:validation:MaxLength=255
	// +optional
	KeyPair *string `json:"keyPair,omitempty"`

	// SecurityGroups (IDs) added to every member's port, besides the cluster's own group
	// (2380 from members only; 2379 from members, the provider and clientCIDRs).
	// +kubebuilder:validation:MaxItems=10
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=64
	// +listType=set
	// +optional
	SecurityGroups []string `json:"securityGroups,omitempty"`

	// ClientCIDRs may reach the members' client port (2379), besides the members and the
	// provider.
	// +kubebuilder:validation:MaxItems=20
	// +kubebuilder:validation:items:XValidation:rule="isCIDR(self)",message="clientCIDRs must be CIDRs such as 10.0.0.0/8"
	// +kubebuilder:validation:items:MaxLength=49
	// +listType=set
	// +optional
	ClientCIDRs []string `json:"clientCIDRs,omitempty"`

	// EtcdPath is where the image holds etcd, with {version} standing for the version
	// (3.6.16): /opt/etcd/v{version}/etcd, the default, is where the provider's documented
	// image recipe puts each release. etcdutl must sit next to it (restores use it).
	// +kubebuilder:validation:MaxLength=255
	// +kubebuilder:validation:Pattern=`^/[A-Za-z0-9._/{}-]+$`
	// +kubebuilder:validation:XValidation:rule="!self.contains('/../') && !self.contains('/./') && !self.endsWith('/..') && !self.endsWith('/.')",message="etcdPath must not hold . or .. segments"
	// +kubebuilder:default="/opt/etcd/v{version}/etcd"
	// +optional
	EtcdPath string `json:"etcdPath,omitempty"`

	// BootVolumeGiB boots each member's server from a Cinder volume of this size (GiB) made
	// from the image, instead of the flavor's root disk (etcd's data then lives on the
	// volume's storage). The volume is made before the server, with the cluster's identity
	// in its metadata, and deleted with the server. A change applies to members made after it.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=16384
	// +optional
	BootVolumeGiB *int32 `json:"bootVolumeGiB,omitempty"`

	// EtcdReleaseURL is where a server whose image lacks etcd at etcdPath downloads it: the
	// release tarball of the member's version on an internal mirror of etcd's releases, with
	// {version} standing for the version, as in
	// https://mirror.example/etcd/v{version}/etcd-v{version}-linux-amd64.tar.gz. The server
	// checks the tarball against the SHA-256 the platform team gave the provider for its
	// file name (the provider's --etcd-release-checksums), unpacks it into etcdPath's
	// directory and runs it; a tarball with other bytes never runs. The provider itself
	// never fetches the URL.
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:Pattern=`^https?://[^\s'"\\@/]+/[^\s'"\\]+$`
	// +kubebuilder:validation:XValidation:rule="!self.endsWith('/')",message="etcdReleaseURL names the release tarball, not a directory"
	// +kubebuilder:validation:XValidation:rule="self.contains('{version}')",message="etcdReleaseURL must name the version ({version}): the checksum is looked up by file name, and each version's tarball has a name of its own"
	// +optional
	EtcdReleaseURL *string `json:"etcdReleaseURL,omitempty"`
}

// TLS settings of a cluster. The provider generates the cluster's CA; peers and clients both
// need certificates it signed.
// +kubebuilder:validation:XValidation:rule="!has(self.certificateValidity) || !has(self.renewBefore) || !self.certificateValidity.matches('^([0-9]+([.][0-9]+)?(h|m|s))+$') || !self.renewBefore.matches('^([0-9]+([.][0-9]+)?(h|m|s))+$') || duration(self.renewBefore) < duration(self.certificateValidity)",message="tls.renewBefore must be shorter than tls.certificateValidity, or certificates would be renewed as soon as they are issued"
// +kubebuilder:validation:XValidation:rule="has(self.renewBefore) || !has(self.certificateValidity) || !self.certificateValidity.matches('^([0-9]+([.][0-9]+)?(h|m|s))+$') || duration(self.certificateValidity) > duration('720h')",message="tls.certificateValidity must be longer than the default renewBefore (720h), or set a shorter tls.renewBefore"
type TLS struct {
	// CertificateValidity of the member and client certificates. Defaults to 8760h (a year);
	// between 1m and 87600h.
	// +kubebuilder:validation:XValidation:rule="!self.matches('^([0-9]+([.][0-9]+)?(h|m|s))+$') || (duration(self) >= duration('1m') && duration(self) <= duration('87600h'))",message="tls.certificateValidity must be between 1m and 87600h"
	// +optional
	CertificateValidity *common.Duration `json:"certificateValidity,omitempty"`

	// RenewBefore: a member whose certificate expires within this is replaced by a member
	// with a fresh certificate (one at a time, like a rolling upgrade), and the client
	// certificate in the connection Secret is renewed. Defaults to 720h (30 days).
	// +kubebuilder:validation:XValidation:rule="!self.matches('^([0-9]+([.][0-9]+)?(h|m|s))+$') || duration(self) <= duration('87600h')",message="tls.renewBefore must be at most 87600h"
	// +optional
	RenewBefore *common.Duration `json:"renewBefore,omitempty"`
}

// Settings are the etcd server settings users tune.
type Settings struct {
	// QuotaBackendBytes is the size the backend database may grow to before etcd raises a
	// NOSPACE alarm and refuses writes (etcd's --quota-backend-bytes). etcd's default is 2 GiB;
	// etcd advises at most 8 GiB.
	// +kubebuilder:validation:Minimum=16777216
	// +kubebuilder:validation:Maximum=8589934592
	// +optional
	QuotaBackendBytes *int64 `json:"quotaBackendBytes,omitempty"`

	// AutoCompactionMode is periodic (retention is a duration) or revision (retention is a
	// number of revisions).
	// +kubebuilder:validation:Enum=periodic;revision
	// +optional
	AutoCompactionMode *string `json:"autoCompactionMode,omitempty"`

	// AutoCompactionRetention: a duration such as 1h for periodic compaction, a number of
	// revisions such as 10000 for revision compaction.
	// +kubebuilder:validation:Pattern=`^([0-9]+|([0-9]+(\.[0-9]+)?(h|m|s))+)$`
	// +optional
	AutoCompactionRetention *string `json:"autoCompactionRetention,omitempty"`

	// SnapshotCount is the number of committed transactions that trigger a snapshot to disk
	// (etcd's --snapshot-count).
	// +kubebuilder:validation:Minimum=100
	// +optional
	SnapshotCount *int64 `json:"snapshotCount,omitempty"`
}

// EtcdClusterParameters are the configurable fields of an EtcdCluster.
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.machines) || has(self.machines)",message="machines cannot be removed: members stay on the machines the cluster was made on"
// +kubebuilder:validation:XValidation:rule="has(self.restore) == has(oldSelf.restore)",message="restore is honoured only when the cluster is created: it cannot be added or removed later"
// +kubebuilder:validation:XValidation:rule="!has(self.settings) || !has(self.settings.autoCompactionRetention) || has(self.settings.autoCompactionMode)",message="settings.autoCompactionRetention needs settings.autoCompactionMode (periodic or revision)"
// +kubebuilder:validation:XValidation:rule="!has(self.settings) || !has(self.settings.autoCompactionMode) || self.settings.autoCompactionMode != 'revision' || !has(self.settings.autoCompactionRetention) || self.settings.autoCompactionRetention.matches('^[0-9]+$')",message="with autoCompactionMode revision, autoCompactionRetention is a number of revisions such as 10000"
type EtcdClusterParameters struct {
	// Version of etcd, for example 3.6.16. Changing it upgrades the cluster by rolling
	// replacement, one member at a time. etcd supports upgrades of one minor version at a
	// time and no downgrades: 3.5.x to 3.6.y is allowed, 3.5.x to 3.7.y and 3.6.x to 3.5.y are
	// refused.
	// +kubebuilder:validation:MaxLength=16
	// +kubebuilder:validation:XValidation:rule="self.matches('^3[.][5-7][.][0-9]{1,3}$')",message="version must be an etcd 3.5, 3.6 or 3.7 release without a leading v, such as 3.6.16"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^3[.][5-7][.][0-9]{1,3}$') || !oldSelf.matches('^3[.][5-7][.][0-9]{1,3}$') || int(self.split('.')[1]) > int(oldSelf.split('.')[1]) || (int(self.split('.')[1]) == int(oldSelf.split('.')[1]) && int(self.split('.')[2]) >= int(oldSelf.split('.')[2]))",message="etcd cannot be downgraded: the version may only stay or go up"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^3[.][5-7][.][0-9]{1,3}$') || !oldSelf.matches('^3[.][5-7][.][0-9]{1,3}$') || int(self.split('.')[1]) - int(oldSelf.split('.')[1]) <= 1",message="etcd upgrades one minor version at a time: upgrade to the next minor release (3.5 to 3.6, 3.6 to 3.7) and let it finish first"
	Version string `json:"version"`

	// Members is the number of voting members: 1, 3, 5 or 7. Scaling adds or removes one
	// member at a time.
	// +kubebuilder:validation:XValidation:rule="self in [1, 3, 5, 7]",message="members must be 1, 3, 5 or 7: an odd number of voters keeps a majority through the most failures"
	// +kubebuilder:default=3
	Members int32 `json:"members"`

	// Machines say where members run. Unset, the cluster runs on the machines its
	// ProviderConfig's etcdMachines gives (the platform team's flavor, image and network),
	// written here before the first member is made, so that a later change of the
	// ProviderConfig moves no member. Once set, machines stay.
	// +optional
	Machines *Machines `json:"machines,omitempty"`

	// TLS of peers and clients.
	// +optional
	TLS *TLS `json:"tls,omitempty"`

	// Settings of the etcd servers. A change reaches members as they are replaced (scaling,
	// upgrades, certificate renewal); existing members keep the settings they started with.
	// +optional
	Settings *Settings `json:"settings,omitempty"`

	// ReplaceUnhealthyAfter: a member that is unhealthy for longer than this is replaced by a
	// new one, as long as the cluster keeps quorum. Defaults to 2m; between 1s and 8760h.
	// +kubebuilder:validation:XValidation:rule="!self.matches('^([0-9]+([.][0-9]+)?(h|m|s))+$') || (duration(self) >= duration('1s') && duration(self) <= duration('8760h'))",message="replaceUnhealthyAfter must be between 1s and 8760h"
	// +optional
	ReplaceUnhealthyAfter *common.Duration `json:"replaceUnhealthyAfter,omitempty"`

	// Paused stops every change to the cluster (membership, machines, certificates) while
	// someone works on it by hand. Observation, backups and the connection Secret continue.
	// +optional
	Paused bool `json:"paused,omitempty"`

	// Backup takes snapshots of the cluster on a schedule into an S3 bucket, and deletes
	// those its retention policy no longer keeps.
	// +optional
	Backup *Backup `json:"backup,omitempty"`

	// Restore makes the cluster from a backup when it is created. It is honoured only then,
	// and cannot change.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="restore cannot change: it is honoured only when the cluster is created"
	// +optional
	Restore *Restore `json:"restore,omitempty"`
}

// Phases of an EtcdCluster.
const (
	PhaseCreating   = "Creating"
	PhaseRunning    = "Running"
	PhaseScaling    = "Scaling"
	PhaseUpgrading  = "Upgrading"
	PhaseHealing    = "Healing"
	PhaseRenewing   = "RenewingCertificates"
	PhaseDegraded   = "Degraded"
	PhaseQuorumLost = "QuorumLost"
	PhasePaused     = "Paused"
	PhaseBlocked    = "Blocked"
)

// MemberObservation is one member of the cluster as the provider sees it.
type MemberObservation struct {
	Name string `json:"name"`
	// ID is the etcd member ID, in hex as etcdctl prints it.
	ID        string `json:"id,omitempty"`
	PeerURL   string `json:"peerURL,omitempty"`
	ClientURL string `json:"clientURL,omitempty"`
	Version   string `json:"version,omitempty"`
	Learner   bool   `json:"learner,omitempty"`
	Leader    bool   `json:"leader,omitempty"`
	Healthy   bool   `json:"healthy"`
	MachineID string `json:"machineID,omitempty"`
	// MachineState is Allocated, Running or Stopped.
	MachineState string `json:"machineState,omitempty"`
	// Server is the member's machine as its backend reports it: for OpenStack machines the
	// server's ID, host, availability zone and status (with Nova's fault message when it
	// failed).
	// +optional
	Server *ServerObservation `json:"server,omitempty"`
	// UnhealthySince is when the provider first saw the member unhealthy.
	UnhealthySince *metav1.Time `json:"unhealthySince,omitempty"`
	// CertificateNotAfter is when the member's certificate expires.
	CertificateNotAfter *metav1.Time `json:"certificateNotAfter,omitempty"`
}

// ServerObservation is a member's server.
type ServerObservation struct {
	ID     string `json:"id,omitempty"`
	Host   string `json:"host,omitempty"`
	Zone   string `json:"zone,omitempty"`
	Status string `json:"status,omitempty"`
	Fault  string `json:"fault,omitempty"`
}

// EtcdClusterObservation is the observed state of an EtcdCluster.
type EtcdClusterObservation struct {
	// Phase is Creating, Running, Scaling, Upgrading, Healing, RenewingCertificates,
	// Degraded, QuorumLost, Paused or Blocked.
	Phase string `json:"phase,omitempty"`
	// ClusterID in hex, as etcdctl prints it.
	ClusterID string `json:"clusterID,omitempty"`
	// Version is the lowest version any member runs.
	Version string `json:"version,omitempty"`
	// Leader is the name of the leader.
	Leader    string              `json:"leader,omitempty"`
	Members   []MemberObservation `json:"members,omitempty"`
	Endpoints []string            `json:"endpoints,omitempty"`
	// NextStep is what the provider does next, or why it waits.
	NextStep string `json:"nextStep,omitempty"`
	// Remaining is how many member changes (an add, a removal, or a replacement, which is
	// both) the change in progress still needs, the next step included: an upgrade of three
	// members starts at 3.
	Remaining int32 `json:"remaining,omitempty"`
	// Refused is etcd's reason for refusing the last membership change the provider tried.
	// etcd refuses changes for a few seconds after a member joins; the provider retries the
	// same change (on the same machine) and clears this once it goes through.
	Refused string `json:"refused,omitempty"`
	// CASecretName names the Secret holding the cluster's CA (in the resource's namespace).
	CASecretName string `json:"caSecretName,omitempty"`
	// ClientCertificateNotAfter is when the client certificate in the connection Secret
	// expires (it is renewed before).
	ClientCertificateNotAfter *metav1.Time `json:"clientCertificateNotAfter,omitempty"`
	// LastMemberIndex is the number of the newest member's name (<name>-<n>). Members that
	// join get the next number, so that no name is ever given twice: a replacement never
	// passes for the member it replaced in events, logs or this status.
	LastMemberIndex int64 `json:"lastMemberIndex,omitempty"`
	// Backup is the state of scheduled backups.
	Backup *BackupObservation `json:"backup,omitempty"`
	// RestoredFrom is the backup the cluster was made from.
	RestoredFrom *RestoredBackup `json:"restoredFrom,omitempty"`
}

// An EtcdClusterSpec defines the desired state of an EtcdCluster.
type EtcdClusterSpec struct {
	xpv2.ManagedResourceSpec `json:",inline"`
	ForProvider              EtcdClusterParameters `json:"forProvider"`
}

// An EtcdClusterStatus represents the observed state of an EtcdCluster.
type EtcdClusterStatus struct {
	xpv2.ManagedResourceStatus `json:",inline"`
	AtProvider                 EtcdClusterObservation `json:"atProvider,omitempty"`
}

// +kubebuilder:object:root=true

// An EtcdCluster is an etcd cluster the provider runs: TLS everywhere, members joined as
// learners and promoted when caught up, scaled and upgraded one member at a time, unhealthy
// members replaced while quorum holds. Its external name is the etcd cluster ID. Its
// connection Secret (writeConnectionSecretToRef) holds what etcdctl and clientv3 need:
// endpoints (the voting members' client URLs, comma-separated), ca.crt, tls.crt and tls.key.
// +kubebuilder:printcolumn:name="READY",type="string",JSONPath=".status.conditions[?(@.type=='Ready')].status"
// +kubebuilder:printcolumn:name="SYNCED",type="string",JSONPath=".status.conditions[?(@.type=='Synced')].status"
// +kubebuilder:printcolumn:name="VERSION",type="string",JSONPath=".status.atProvider.version"
// +kubebuilder:printcolumn:name="MEMBERS",type="integer",JSONPath=".spec.forProvider.members"
// +kubebuilder:printcolumn:name="PHASE",type="string",JSONPath=".status.atProvider.phase"
// +kubebuilder:printcolumn:name="LAST-BACKUP",type="date",JSONPath=".status.atProvider.backup.lastSuccessTime"
// +kubebuilder:printcolumn:name="BACKUPS",type="string",JSONPath=".status.atProvider.backup.state",priority=1
// +kubebuilder:printcolumn:name="LEADER",type="string",JSONPath=".status.atProvider.leader",priority=1
// +kubebuilder:printcolumn:name="AGE",type="date",JSONPath=".metadata.creationTimestamp"
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,categories={crossplane,managed,stackservices}
type EtcdCluster struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   EtcdClusterSpec   `json:"spec"`
	Status EtcdClusterStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// EtcdClusterList contains a list of EtcdCluster.
type EtcdClusterList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []EtcdCluster `json:"items"`
}

package s3

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/test"
)

var owner = Owner{ID: "proj:alice", DisplayName: "Alice"}

func id(perm, v string) Grant {
	return Grant{Permission: perm, Grantee: Grantee{Type: GranteeID, Value: v}}
}

func uri(perm, v string) Grant {
	return Grant{Permission: perm, Grantee: Grantee{Type: GranteeURI, Value: v}}
}

func email(perm, v string) Grant {
	return Grant{Permission: perm, Grantee: Grantee{Type: GranteeEmail, Value: v}}
}

func TestExpandCannedACL(t *testing.T) {
	ownerFull := Grant{Permission: PermissionFullControl, Grantee: Grantee{Type: GranteeID, Value: "proj:alice", DisplayName: "Alice"}}
	type want struct {
		grants []Grant
		err    error
	}
	cases := map[string]struct {
		canned string
		want   want
	}{
		"Private": {
			canned: ACLPrivate,
			want:   want{grants: []Grant{ownerFull}},
		},
		"PublicRead": {
			canned: ACLPublicRead,
			want:   want{grants: []Grant{ownerFull, uri(PermissionRead, AllUsers)}},
		},
		"PublicReadWrite": {
			canned: ACLPublicReadWrite,
			want:   want{grants: []Grant{ownerFull, uri(PermissionRead, AllUsers), uri(PermissionWrite, AllUsers)}},
		},
		"AuthenticatedRead": {
			canned: ACLAuthenticatedRead,
			want:   want{grants: []Grant{ownerFull, uri(PermissionRead, AuthenticatedUsers)}},
		},
		"Unknown": {
			canned: "bucket-owner-full-control",
			want:   want{err: errors.Errorf(errFmtUnknownCannedACL, "bucket-owner-full-control")},
		},
		"CaseMatters": {
			canned: "Private",
			want:   want{err: errors.Errorf(errFmtUnknownCannedACL, "Private")},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := ExpandCannedACL(tc.canned, owner)
			if diff := cmp.Diff(tc.want.err, err, test.EquateErrors()); diff != "" {
				t.Errorf("ExpandCannedACL(...): -want error, +got error:\n%s", diff)
			}
			if diff := cmp.Diff(tc.want.grants, got); diff != "" {
				t.Errorf("ExpandCannedACL(...): -want, +got:\n%s", diff)
			}
		})
	}
}

// TestCannedEqualsExplicit checks that a canned ACL compares equal with the grant
// list a server returns for it, written the many ways servers and users write it.
func TestCannedEqualsExplicit(t *testing.T) {
	cases := map[string]struct {
		canned   string
		explicit []Grant
		want     bool
	}{
		"PrivateAsServersReturnIt": {
			canned:   ACLPrivate,
			explicit: []Grant{{Permission: "FULL_CONTROL", Grantee: Grantee{Type: GranteeID, Value: "proj:alice", DisplayName: "proj:alice"}}},
			want:     true,
		},
		"PublicReadReorderedWithHTTPS": {
			canned: ACLPublicRead,
			explicit: []Grant{
				uri("READ", "https://acs.amazonaws.com/groups/global/AllUsers"),
				id("FULL_CONTROL", "proj:alice"),
			},
			want: true,
		},
		"PublicReadWriteWithXMLTypeNames": {
			canned: ACLPublicReadWrite,
			explicit: []Grant{
				{Permission: "WRITE", Grantee: Grantee{Type: "Group", Value: AllUsers}},
				{Permission: "READ", Grantee: Grantee{Type: "Group", Value: AllUsers}},
				{Permission: "FULL_CONTROL", Grantee: Grantee{Type: "CanonicalUser", Value: "proj:alice"}},
			},
			want: true,
		},
		"AuthenticatedRead": {
			canned:   ACLAuthenticatedRead,
			explicit: []Grant{id("FULL_CONTROL", "proj:alice"), uri("READ", AuthenticatedUsers)},
			want:     true,
		},
		"PublicReadIsNotPrivate": {
			canned:   ACLPublicRead,
			explicit: []Grant{id("FULL_CONTROL", "proj:alice")},
			want:     false,
		},
		"PublicReadIsNotAuthenticatedRead": {
			canned:   ACLPublicRead,
			explicit: []Grant{id("FULL_CONTROL", "proj:alice"), uri("READ", AuthenticatedUsers)},
			want:     false,
		},
		"AnotherOwner": {
			canned:   ACLPrivate,
			explicit: []Grant{id("FULL_CONTROL", "proj:bob")},
			want:     false,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			canned, err := ExpandCannedACL(tc.canned, owner)
			if err != nil {
				t.Fatalf("ExpandCannedACL(%q): %v", tc.canned, err)
			}
			if diff := cmp.Diff(tc.want, GrantsEqual(canned, tc.explicit)); diff != "" {
				t.Errorf("GrantsEqual(canned %s, explicit): -want, +got:\n%s", tc.canned, diff)
			}
		})
	}
}

func TestWithOwner(t *testing.T) {
	ownerFull := Grant{Permission: PermissionFullControl, Grantee: Grantee{Type: GranteeID, Value: "proj:alice", DisplayName: "Alice"}}
	cases := map[string]struct {
		grants []Grant
		owner  Owner
		want   []Grant
	}{
		"Added": {
			grants: []Grant{uri("READ", AllUsers)},
			owner:  owner,
			want:   []Grant{uri("READ", AllUsers), ownerFull},
		},
		"AddedToNothing": {
			owner: owner,
			want:  []Grant{ownerFull},
		},
		"KeptWhenPresent": {
			grants: []Grant{id("FULL_CONTROL", "proj:alice"), uri("READ", AllUsers)},
			owner:  owner,
			want:   []Grant{id("FULL_CONTROL", "proj:alice"), uri("READ", AllUsers)},
		},
		"KeptWhenPresentWithAnotherSpelling": {
			grants: []Grant{{Permission: "full_control", Grantee: Grantee{Type: "CanonicalUser", Value: " proj:alice ", DisplayName: "someone"}}},
			owner:  owner,
			want:   []Grant{{Permission: "full_control", Grantee: Grantee{Type: "CanonicalUser", Value: " proj:alice ", DisplayName: "someone"}}},
		},
		"AddedWhenOwnerOnlyReads": {
			grants: []Grant{id("READ", "proj:alice")},
			owner:  owner,
			want:   []Grant{id("READ", "proj:alice"), ownerFull},
		},
		"AddedWhenAnotherUserHasFullControl": {
			grants: []Grant{id("FULL_CONTROL", "proj:bob")},
			owner:  owner,
			want:   []Grant{id("FULL_CONTROL", "proj:bob"), ownerFull},
		},
		"UnknownOwner": {
			grants: []Grant{uri("READ", AllUsers)},
			want:   []Grant{uri("READ", AllUsers)},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			in := append([]Grant(nil), tc.grants...)
			got := WithOwner(tc.grants, tc.owner)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("WithOwner(...): -want, +got:\n%s", diff)
			}
			if diff := cmp.Diff(in, tc.grants); diff != "" {
				t.Errorf("WithOwner(...) modified its input: -before, +after:\n%s", diff)
			}
		})
	}
}

func TestNormalizeGrants(t *testing.T) {
	cases := map[string]struct {
		grants []Grant
		want   []Grant
	}{
		"Nil": {},
		"Empty": {
			grants: []Grant{},
		},
		"Sorted": {
			grants: []Grant{
				uri("READ", AllUsers),
				id("WRITE", "proj:bob"),
				id("FULL_CONTROL", "proj:alice"),
				email("READ", "carol@example.com"),
				id("READ", "proj:bob"),
			},
			want: []Grant{
				email("READ", "carol@example.com"),
				id("FULL_CONTROL", "proj:alice"),
				id("READ", "proj:bob"),
				id("WRITE", "proj:bob"),
				uri("READ", AllUsers),
			},
		},
		"Deduplicated": {
			grants: []Grant{id("READ", "proj:bob"), id("READ", "proj:bob"), id("READ", "proj:bob")},
			want:   []Grant{id("READ", "proj:bob")},
		},
		"DisplayNamesDropped": {
			grants: []Grant{
				{Permission: "READ", Grantee: Grantee{Type: GranteeID, Value: "proj:bob", DisplayName: "Bob"}},
				{Permission: "READ", Grantee: Grantee{Type: GranteeID, Value: "proj:bob", DisplayName: "bob (again)"}},
			},
			want: []Grant{id("READ", "proj:bob")},
		},
		"GroupSchemes": {
			grants: []Grant{
				uri("READ", "https://acs.amazonaws.com/groups/global/AllUsers"),
				uri("READ", "http://acs.amazonaws.com/groups/global/AllUsers"),
				uri("WRITE", "HTTPS://ACS.AMAZONAWS.COM/groups/global/AllUsers"),
				uri("READ", "https://acs.amazonaws.com/groups/global/AuthenticatedUsers"),
			},
			want: []Grant{
				uri("READ", AllUsers),
				uri("WRITE", AllUsers),
				uri("READ", AuthenticatedUsers),
			},
		},
		"OtherURIsUntouched": {
			grants: []Grant{uri("READ", "https://example.com/Group")},
			want:   []Grant{uri("READ", "https://example.com/Group")},
		},
		"EmailsLowerCased": {
			grants: []Grant{email("READ", "Carol@Example.COM"), email("READ", "carol@example.com")},
			want:   []Grant{email("READ", "carol@example.com")},
		},
		"IDsKeepTheirCase": {
			grants: []Grant{id("READ", "AKIAEXAMPLE"), id("READ", "akiaexample")},
			want:   []Grant{id("READ", "AKIAEXAMPLE"), id("READ", "akiaexample")},
		},
		"FullControlNotExpanded": {
			grants: []Grant{id("FULL_CONTROL", "proj:bob"), id("READ", "proj:bob")},
			want:   []Grant{id("FULL_CONTROL", "proj:bob"), id("READ", "proj:bob")},
		},
		"XMLTypeNamesAndPermissionCase": {
			grants: []Grant{
				{Permission: "read", Grantee: Grantee{Type: "CanonicalUser", Value: "proj:bob"}},
				{Permission: "Read", Grantee: Grantee{Type: "AmazonCustomerByEmail", Value: "dave@example.com"}},
				{Permission: " READ ", Grantee: Grantee{Type: "Group", Value: AllUsers}},
			},
			want: []Grant{email("READ", "dave@example.com"), id("READ", "proj:bob"), uri("READ", AllUsers)},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := NormalizeGrants(tc.grants)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("NormalizeGrants(...): -want, +got:\n%s", diff)
			}
		})
	}
}

func TestGrantsEqual(t *testing.T) {
	cases := map[string]struct {
		a, b []Grant
		want bool
	}{
		"BothEmpty": {
			a:    nil,
			b:    []Grant{},
			want: true,
		},
		"Order": {
			a:    []Grant{id("READ", "proj:bob"), id("FULL_CONTROL", "proj:alice")},
			b:    []Grant{id("FULL_CONTROL", "proj:alice"), id("READ", "proj:bob")},
			want: true,
		},
		"Duplicates": {
			a:    []Grant{id("READ", "proj:bob"), id("READ", "proj:bob")},
			b:    []Grant{id("READ", "proj:bob")},
			want: true,
		},
		"DisplayNames": {
			a:    []Grant{{Permission: "READ", Grantee: Grantee{Type: GranteeID, Value: "proj:bob", DisplayName: "Bob"}}},
			b:    []Grant{id("READ", "proj:bob")},
			want: true,
		},
		"GroupSchemes": {
			a:    []Grant{uri("READ", "https://acs.amazonaws.com/groups/global/AllUsers")},
			b:    []Grant{uri("READ", AllUsers)},
			want: true,
		},
		"EmailCase": {
			a:    []Grant{email("WRITE", "Carol@Example.com")},
			b:    []Grant{email("WRITE", "carol@example.com")},
			want: true,
		},
		"FullControlIsNotItsParts": {
			a: []Grant{id("FULL_CONTROL", "proj:bob")},
			b: []Grant{
				id("READ", "proj:bob"), id("WRITE", "proj:bob"),
				id("READ_ACP", "proj:bob"), id("WRITE_ACP", "proj:bob"),
			},
			want: false,
		},
		"DifferentPermission": {
			a:    []Grant{id("READ", "proj:bob")},
			b:    []Grant{id("WRITE", "proj:bob")},
			want: false,
		},
		"DifferentGrantee": {
			a:    []Grant{id("READ", "proj:bob")},
			b:    []Grant{id("READ", "proj:carol")},
			want: false,
		},
		"DifferentGranteeType": {
			a:    []Grant{id("READ", "carol@example.com")},
			b:    []Grant{email("READ", "carol@example.com")},
			want: false,
		},
		"ExtraGrant": {
			a:    []Grant{id("READ", "proj:bob")},
			b:    []Grant{id("READ", "proj:bob"), uri("READ", AllUsers)},
			want: false,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, GrantsEqual(tc.a, tc.b)); diff != "" {
				t.Errorf("GrantsEqual(a, b): -want, +got:\n%s", diff)
			}
			if diff := cmp.Diff(tc.want, GrantsEqual(tc.b, tc.a)); diff != "" {
				t.Errorf("GrantsEqual(b, a): -want, +got:\n%s", diff)
			}
		})
	}
}

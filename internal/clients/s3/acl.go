package s3

import (
	"cmp"
	"slices"
	"strings"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

const errFmtUnknownCannedACL = "unknown canned ACL %q: want one of private, public-read, public-read-write, authenticated-read"

// Grantee types as in the S3 API's grant headers (x-amz-grant-read: id="...").
const (
	GranteeID    = "id"
	GranteeEmail = "emailAddress"
	GranteeURI   = "uri"
)

// Permissions a grant may give.
const (
	PermissionFullControl = "FULL_CONTROL"
	PermissionRead        = "READ"
	PermissionWrite       = "WRITE"
	PermissionReadACP     = "READ_ACP"
	PermissionWriteACP    = "WRITE_ACP"
)

// Canned ACLs a bucket may have.
const (
	ACLPrivate           = "private"
	ACLPublicRead        = "public-read"
	ACLPublicReadWrite   = "public-read-write"
	ACLAuthenticatedRead = "authenticated-read"
)

// Predefined groups, as S3 servers return them (http scheme).
const (
	AllUsers           = "http://acs.amazonaws.com/groups/global/AllUsers"
	AuthenticatedUsers = "http://acs.amazonaws.com/groups/global/AuthenticatedUsers"
)

// A Grantee is who a grant is for.
type Grantee struct {
	// Type is GranteeID, GranteeEmail or GranteeURI.
	Type string
	// Value is the canonical user ID, the email address or the group URI.
	Value string
	// DisplayName is what the server calls the grantee. It is informational only:
	// servers fill it in (or not) as they like, so comparisons ignore it.
	DisplayName string
}

// A Grant gives a grantee one permission.
type Grant struct {
	// Permission is FULL_CONTROL, READ, WRITE, READ_ACP or WRITE_ACP.
	Permission string
	Grantee    Grantee
}

// An Owner is the canonical user that owns a bucket.
type Owner struct {
	ID, DisplayName string
}

// An ACL is a bucket's owner and grants.
type ACL struct {
	Owner  Owner
	Grants []Grant
}

func ownerGrant(owner Owner) Grant {
	return Grant{Permission: PermissionFullControl, Grantee: Grantee{Type: GranteeID, Value: owner.ID, DisplayName: owner.DisplayName}}
}

func groupGrant(permission, uri string) Grant {
	return Grant{Permission: permission, Grantee: Grantee{Type: GranteeURI, Value: uri}}
}

// ExpandCannedACL returns the grants a canned ACL stands for, for the given owner,
// so that a bucket whose spec names a canned ACL can be compared with the explicit
// grants a server returns (servers never return the canned name).
func ExpandCannedACL(canned string, owner Owner) ([]Grant, error) {
	grants := []Grant{ownerGrant(owner)}
	switch canned {
	case ACLPrivate:
	case ACLPublicRead:
		grants = append(grants, groupGrant(PermissionRead, AllUsers))
	case ACLPublicReadWrite:
		grants = append(grants, groupGrant(PermissionRead, AllUsers), groupGrant(PermissionWrite, AllUsers))
	case ACLAuthenticatedRead:
		grants = append(grants, groupGrant(PermissionRead, AuthenticatedUsers))
	default:
		return nil, errors.Errorf(errFmtUnknownCannedACL, canned)
	}
	return grants, nil
}

// WithOwner returns the grants plus FULL_CONTROL for the owner if they do not
// already give it: an ACL that locks its owner out is never what anyone wants, and
// servers add it anyway, so a desired ACL without it would never compare equal.
// An owner without an ID (unknown) adds nothing. The input is not modified.
func WithOwner(grants []Grant, owner Owner) []Grant {
	out := slices.Clone(grants)
	if owner.ID == "" {
		return out
	}
	want := normalizeGrant(ownerGrant(owner))
	for _, g := range grants {
		if normalizeGrant(g) == want {
			return out
		}
	}
	return append(out, ownerGrant(owner))
}

// NormalizeGrants returns the grants in a canonical form, sorted and without
// duplicates, so that two lists that grant the same compare equal with cmp or
// slices.Equal: grantee types in the S3 API's spelling whatever the input used
// (CanonicalUser, AmazonCustomerByEmail and Group are accepted too), email
// addresses lower-cased, the acs.amazonaws.com group URIs with the http scheme
// (servers and users write both), display names dropped, permissions upper-cased.
// FULL_CONTROL stays a single grant: servers store and return it as one.
// It returns nil for no grants.
func NormalizeGrants(grants []Grant) []Grant {
	if len(grants) == 0 {
		return nil
	}
	out := make([]Grant, 0, len(grants))
	for _, g := range grants {
		out = append(out, normalizeGrant(g))
	}
	slices.SortFunc(out, func(a, b Grant) int {
		return cmp.Or(
			cmp.Compare(a.Grantee.Type, b.Grantee.Type),
			cmp.Compare(a.Grantee.Value, b.Grantee.Value),
			cmp.Compare(a.Permission, b.Permission),
		)
	})
	return slices.Compact(out)
}

// GrantsEqual tells whether a and b grant the same permissions to the same
// grantees, in whatever order and with whatever duplicates and display names.
func GrantsEqual(a, b []Grant) bool {
	return slices.Equal(NormalizeGrants(a), NormalizeGrants(b))
}

func normalizeGrant(g Grant) Grant {
	t := normalizeGranteeType(g.Grantee.Type)
	v := strings.TrimSpace(g.Grantee.Value)
	switch t {
	case GranteeEmail:
		v = strings.ToLower(v)
	case GranteeURI:
		v = normalizeGroupURI(v)
	}
	return Grant{
		Permission: strings.ToUpper(strings.TrimSpace(g.Permission)),
		Grantee:    Grantee{Type: t, Value: v},
	}
}

// normalizeGranteeType returns t in the grant-header spelling, accepting the XML
// spellings (xsi:type) and any case. Unknown types are returned as they are.
func normalizeGranteeType(t string) string {
	switch strings.ToLower(strings.TrimSpace(t)) {
	case "id", "canonicaluser":
		return GranteeID
	case "emailaddress", "amazoncustomerbyemail":
		return GranteeEmail
	case "uri", "group":
		return GranteeURI
	}
	return t
}

// normalizeGroupURI returns the http form of an acs.amazonaws.com group URI: AWS
// documents the groups with http, users often write https, both mean the group.
func normalizeGroupURI(u string) string {
	const canonical = "http://acs.amazonaws.com/"
	for _, p := range []string{canonical, "https://acs.amazonaws.com/"} {
		if len(u) >= len(p) && strings.EqualFold(u[:len(p)], p) {
			return canonical + u[len(p):]
		}
	}
	return u
}

package s3

import (
	"bytes"
	"encoding/json"
	"io"
	"slices"
	"strings"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

const (
	errParsePolicy   = "cannot parse the bucket policy as JSON"
	errPolicyObject  = "the bucket policy is not a JSON object"
	errPolicyTrailer = "the bucket policy has data after its JSON object"
	errEncodePolicy  = "cannot encode the normalized bucket policy"
	errNormalizeA    = "cannot normalize the first policy"
	errNormalizeB    = "cannot normalize the second policy"
)

// Statement keys whose value may be a string or a list of strings, meaning the same
// when the list holds just that string.
var stringOrListKeys = []string{"Action", "NotAction", "Resource", "NotResource"}

// NormalizePolicy returns the canonical JSON of a bucket policy document, so that
// two documents that mean the same are equal as strings: servers reformat what they
// store, and users write the same policy in many ways, and comparing raw strings
// would re-PUT the policy on every poll.
//
// The canonical form has object keys sorted and no insignificant whitespace;
// "Statement" is always an array, sorted by each statement's canonical JSON,
// without duplicates; in each statement Action, NotAction, Resource, NotResource,
// every value in a Principal or NotPrincipal object and every value under a
// Condition operator is an array of strings, sorted and de-duplicated, when it was
// a string or an array of strings. Principal "*" stays "*": it is not the same as
// {"AWS": "*"}. Numbers keep their literal text. Everything else is left as it is.
//
// An empty or whitespace-only document normalizes to "". A document that is not a
// single JSON object is an error.
func NormalizePolicy(doc string) (string, error) {
	if strings.TrimSpace(doc) == "" {
		return "", nil
	}
	d := json.NewDecoder(strings.NewReader(doc))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return "", errors.Wrap(err, errParsePolicy)
	}
	if _, err := d.Token(); !errors.Is(err, io.EOF) {
		return "", errors.New(errPolicyTrailer)
	}
	p, ok := v.(map[string]any)
	if !ok {
		return "", errors.New(errPolicyObject)
	}
	if err := normalizeStatements(p); err != nil {
		return "", err
	}
	b, err := canonicalJSON(p)
	return string(b), errors.Wrap(err, errEncodePolicy)
}

// PoliciesEqual tells whether two policy documents mean the same, as far as
// NormalizePolicy can tell.
func PoliciesEqual(a, b string) (bool, error) {
	na, err := NormalizePolicy(a)
	if err != nil {
		return false, errors.Wrap(err, errNormalizeA)
	}
	nb, err := NormalizePolicy(b)
	if err != nil {
		return false, errors.Wrap(err, errNormalizeB)
	}
	return na == nb, nil
}

func normalizeStatements(p map[string]any) error {
	var stmts []any
	switch s := p["Statement"].(type) {
	case map[string]any:
		stmts = []any{s}
	case []any:
		stmts = s
	default:
		// Absent or malformed: nothing to normalize; the server judges it.
		return nil
	}
	type keyed struct {
		key  string
		stmt any
	}
	ks := make([]keyed, 0, len(stmts))
	for _, s := range stmts {
		if m, ok := s.(map[string]any); ok {
			normalizeStatement(m)
		}
		b, err := canonicalJSON(s)
		if err != nil {
			return errors.Wrap(err, errEncodePolicy)
		}
		ks = append(ks, keyed{key: string(b), stmt: s})
	}
	slices.SortFunc(ks, func(a, b keyed) int { return strings.Compare(a.key, b.key) })
	ks = slices.CompactFunc(ks, func(a, b keyed) bool { return a.key == b.key })
	out := make([]any, 0, len(ks))
	for _, k := range ks {
		out = append(out, k.stmt)
	}
	p["Statement"] = out
	return nil
}

func normalizeStatement(s map[string]any) {
	for _, k := range stringOrListKeys {
		if v, ok := s[k]; ok {
			s[k] = stringSet(v)
		}
	}
	for _, k := range []string{"Principal", "NotPrincipal"} {
		// A string principal ("*") is left alone: it means everyone, anonymous
		// included, which {"AWS": "*"} does not.
		if m, ok := s[k].(map[string]any); ok {
			for typ, v := range m {
				m[typ] = stringSet(v)
			}
		}
	}
	if ops, ok := s["Condition"].(map[string]any); ok {
		for _, op := range ops {
			if keys, ok := op.(map[string]any); ok {
				for k, v := range keys {
					keys[k] = stringSet(v)
				}
			}
		}
	}
}

// stringSet returns a string or an array of strings as a sorted array of distinct
// strings, and anything else unchanged.
func stringSet(v any) any {
	switch t := v.(type) {
	case string:
		return []any{t}
	case []any:
		ss := make([]string, 0, len(t))
		for _, e := range t {
			s, ok := e.(string)
			if !ok {
				return v
			}
			ss = append(ss, s)
		}
		slices.Sort(ss)
		ss = slices.Compact(ss)
		out := make([]any, 0, len(ss))
		for _, s := range ss {
			out = append(out, s)
		}
		return out
	}
	return v
}

// canonicalJSON encodes v compactly. encoding/json sorts map keys; HTML escaping is
// off so that the output reads like the input ("<", ">", "&" in conditions).
func canonicalJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	e := json.NewEncoder(&buf)
	e.SetEscapeHTML(false)
	if err := e.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

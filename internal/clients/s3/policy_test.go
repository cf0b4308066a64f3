package s3

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/test"
)

func TestNormalizePolicy(t *testing.T) {
	type want struct {
		doc string
		err error
	}
	cases := map[string]struct {
		reason string
		doc    string
		want   want
	}{
		"Empty": {
			reason: "No policy normalizes to no policy.",
			doc:    "",
			want:   want{doc: ""},
		},
		"Whitespace": {
			reason: "Whitespace is no policy.",
			doc:    " \n\t ",
			want:   want{doc: ""},
		},
		"EmptyObject": {
			reason: "An empty object is a document, not the absence of one.",
			doc:    " { } ",
			want:   want{doc: "{}"},
		},
		"Canonical": {
			reason: "Keys are sorted, whitespace dropped, a single statement and single strings become arrays.",
			doc: `{
				"Version": "2012-10-17",
				"Statement": {
					"Sid": "Public",
					"Resource": "arn:aws:s3:::b/*",
					"Principal": "*",
					"Effect": "Allow",
					"Action": "s3:GetObject"
				}
			}`,
			want: want{doc: `{"Statement":[{"Action":["s3:GetObject"],"Effect":"Allow","Principal":"*","Resource":["arn:aws:s3:::b/*"],"Sid":"Public"}],"Version":"2012-10-17"}`},
		},
		"ListsSortedAndDeduplicated": {
			reason: "Action, NotAction, Resource and NotResource are sets.",
			doc:    `{"Statement":[{"Effect":"Deny","NotAction":["s3:PutObject","s3:DeleteObject","s3:PutObject"],"NotResource":["b","a","a"],"Principal":"*"}]}`,
			want:   want{doc: `{"Statement":[{"Effect":"Deny","NotAction":["s3:DeleteObject","s3:PutObject"],"NotResource":["a","b"],"Principal":"*"}]}`},
		},
		"PrincipalObject": {
			reason: "Every value in a Principal or NotPrincipal object is a set.",
			doc:    `{"Statement":[{"Effect":"Allow","Action":"s3:*","Principal":{"AWS":["arn:b","arn:a"],"CanonicalUser":"c"},"NotPrincipal":{"AWS":"x"}}]}`,
			want:   want{doc: `{"Statement":[{"Action":["s3:*"],"Effect":"Allow","NotPrincipal":{"AWS":["x"]},"Principal":{"AWS":["arn:a","arn:b"],"CanonicalUser":["c"]}}]}`},
		},
		"Condition": {
			reason: "Every string value under a Condition operator is a set; other values are left alone.",
			doc:    `{"Statement":[{"Effect":"Deny","Action":"s3:*","Principal":"*","Condition":{"IpAddress":{"aws:SourceIp":["10.0.0.0/8","192.168.0.0/16","10.0.0.0/8"]},"Bool":{"aws:SecureTransport":false},"NumericLessThan":{"s3:max-keys":[10,5]},"StringEquals":{"s3:prefix":"home/"}}}]}`,
			want:   want{doc: `{"Statement":[{"Action":["s3:*"],"Condition":{"Bool":{"aws:SecureTransport":false},"IpAddress":{"aws:SourceIp":["10.0.0.0/8","192.168.0.0/16"]},"NumericLessThan":{"s3:max-keys":[10,5]},"StringEquals":{"s3:prefix":["home/"]}},"Effect":"Deny","Principal":"*"}]}`},
		},
		"StatementsSorted": {
			reason: "Statements are sorted by their canonical JSON, and duplicates dropped.",
			doc:    `{"Statement":[{"Sid":"B","Effect":"Allow","Action":"s3:GetObject","Principal":"*"},{"Sid":"A","Effect":"Allow","Action":"s3:ListBucket","Principal":"*"},{"Principal":"*","Action":["s3:GetObject"],"Effect":"Allow","Sid":"B"}]}`,
			want:   want{doc: `{"Statement":[{"Action":["s3:GetObject"],"Effect":"Allow","Principal":"*","Sid":"B"},{"Action":["s3:ListBucket"],"Effect":"Allow","Principal":"*","Sid":"A"}]}`},
		},
		"NumbersAndStringsKept": {
			reason: "Version stays a string; numbers keep their literal text; other keys are untouched.",
			doc:    `{"Version":"2012-10-17","Id":"x","N":1.50,"Big":12345678901234567890}`,
			want:   want{doc: `{"Big":12345678901234567890,"Id":"x","N":1.50,"Version":"2012-10-17"}`},
		},
		"NoHTMLEscaping": {
			reason: "The canonical form reads like the input.",
			doc:    `{"Statement":[{"Sid":"a<b&c>d"}]}`,
			want:   want{doc: `{"Statement":[{"Sid":"a<b&c>d"}]}`},
		},
		"MalformedStatementLeftAlone": {
			reason: "What the normalizer does not understand it leaves to the server to judge.",
			doc:    `{"Statement":"nonsense","Version":"2012-10-17"}`,
			want:   want{doc: `{"Statement":"nonsense","Version":"2012-10-17"}`},
		},
		"Array": {
			reason: "A policy is a JSON object.",
			doc:    `[{"Version":"2012-10-17"}]`,
			want:   want{err: errors.New(errPolicyObject)},
		},
		"String": {
			reason: "A policy is a JSON object.",
			doc:    `"policy"`,
			want:   want{err: errors.New(errPolicyObject)},
		},
		"Null": {
			reason: "A policy is a JSON object.",
			doc:    `null`,
			want:   want{err: errors.New(errPolicyObject)},
		},
		"TrailingData": {
			reason: "A policy is one JSON object.",
			doc:    `{"Version":"2012-10-17"} {}`,
			want:   want{err: errors.New(errPolicyTrailer)},
		},
		"NotJSON": {
			reason: "A policy is JSON.",
			doc:    `{"Version":`,
			want:   want{err: errors.Wrap(errors.New("unexpected EOF"), errParsePolicy)},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := NormalizePolicy(tc.doc)
			if diff := cmp.Diff(tc.want.err, err, test.EquateErrors()); diff != "" {
				t.Errorf("%s\nNormalizePolicy(...): -want error, +got error:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.want.doc, got); diff != "" {
				t.Errorf("%s\nNormalizePolicy(...): -want, +got:\n%s", tc.reason, diff)
			}
			if err != nil {
				return
			}
			// The canonical form is a fixed point.
			again, err := NormalizePolicy(got)
			if err != nil {
				t.Fatalf("NormalizePolicy(NormalizePolicy(...)): %v", err)
			}
			if diff := cmp.Diff(got, again); diff != "" {
				t.Errorf("NormalizePolicy is not idempotent: -once, +twice:\n%s", diff)
			}
		})
	}
}

func TestPoliciesEqual(t *testing.T) {
	const base = `{"Version":"2012-10-17","Statement":[{"Sid":"Read","Effect":"Allow","Principal":{"AWS":["*"]},"Action":["s3:GetObject"],"Resource":["arn:aws:s3:::b/*"]}]}`
	type want struct {
		equal bool
		err   error
	}
	cases := map[string]struct {
		a, b string
		want want
	}{
		"Identical": {
			a:    base,
			b:    base,
			want: want{equal: true},
		},
		"KeyOrder": {
			a:    base,
			b:    `{"Statement":[{"Resource":["arn:aws:s3:::b/*"],"Action":["s3:GetObject"],"Principal":{"AWS":["*"]},"Effect":"Allow","Sid":"Read"}],"Version":"2012-10-17"}`,
			want: want{equal: true},
		},
		"Whitespace": {
			a: base,
			b: `{
  "Version" : "2012-10-17",
  "Statement" : [ {
    "Sid" : "Read", "Effect" : "Allow",
    "Principal" : { "AWS" : [ "*" ] },
    "Action" : [ "s3:GetObject" ],
    "Resource" : [ "arn:aws:s3:::b/*" ]
  } ]
}`,
			want: want{equal: true},
		},
		"SingleStatementObject": {
			a:    base,
			b:    `{"Version":"2012-10-17","Statement":{"Sid":"Read","Effect":"Allow","Principal":{"AWS":["*"]},"Action":["s3:GetObject"],"Resource":["arn:aws:s3:::b/*"]}}`,
			want: want{equal: true},
		},
		"ScalarsForOneElementLists": {
			a:    base,
			b:    `{"Version":"2012-10-17","Statement":[{"Sid":"Read","Effect":"Allow","Principal":{"AWS":"*"},"Action":"s3:GetObject","Resource":"arn:aws:s3:::b/*"}]}`,
			want: want{equal: true},
		},
		"ActionOrderAndDuplicates": {
			a:    `{"Statement":[{"Effect":"Allow","Principal":"*","Action":["s3:GetObject","s3:ListBucket"]}]}`,
			b:    `{"Statement":[{"Effect":"Allow","Principal":"*","Action":["s3:ListBucket","s3:GetObject","s3:ListBucket"]}]}`,
			want: want{equal: true},
		},
		"StatementOrder": {
			a:    `{"Statement":[{"Sid":"1","Effect":"Allow","Principal":"*","Action":"s3:GetObject"},{"Sid":"2","Effect":"Deny","Principal":"*","Action":"s3:DeleteObject"}]}`,
			b:    `{"Statement":[{"Sid":"2","Effect":"Deny","Principal":"*","Action":"s3:DeleteObject"},{"Sid":"1","Effect":"Allow","Principal":"*","Action":"s3:GetObject"}]}`,
			want: want{equal: true},
		},
		"ConditionValueOrder": {
			a:    `{"Statement":[{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Condition":{"IpAddress":{"aws:SourceIp":["10.0.0.0/8","192.168.0.0/16"]}}}]}`,
			b:    `{"Statement":[{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Condition":{"IpAddress":{"aws:SourceIp":["192.168.0.0/16","10.0.0.0/8"]}}}]}`,
			want: want{equal: true},
		},
		"ConditionScalar": {
			a:    `{"Statement":[{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Condition":{"StringLike":{"s3:prefix":"home/*"}}}]}`,
			b:    `{"Statement":[{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Condition":{"StringLike":{"s3:prefix":["home/*"]}}}]}`,
			want: want{equal: true},
		},
		"PrincipalStarIsNotAWSStar": {
			a:    `{"Statement":[{"Effect":"Allow","Principal":"*","Action":"s3:GetObject"}]}`,
			b:    `{"Statement":[{"Effect":"Allow","Principal":{"AWS":"*"},"Action":"s3:GetObject"}]}`,
			want: want{equal: false},
		},
		"DifferentAction": {
			a:    `{"Statement":[{"Effect":"Allow","Principal":"*","Action":"s3:GetObject"}]}`,
			b:    `{"Statement":[{"Effect":"Allow","Principal":"*","Action":"s3:PutObject"}]}`,
			want: want{equal: false},
		},
		"ExtraStatement": {
			a:    `{"Statement":[{"Effect":"Allow","Principal":"*","Action":"s3:GetObject"}]}`,
			b:    `{"Statement":[{"Effect":"Allow","Principal":"*","Action":"s3:GetObject"},{"Effect":"Deny","Principal":"*","Action":"s3:PutObject"}]}`,
			want: want{equal: false},
		},
		"VersionStringIsNotANumber": {
			a:    `{"Version":"2012-10-17"}`,
			b:    `{"Version":20121017}`,
			want: want{equal: false},
		},
		"BothEmpty": {
			a:    "",
			b:    "  \n",
			want: want{equal: true},
		},
		"EmptyIsNotEmptyObject": {
			a:    "",
			b:    "{}",
			want: want{equal: false},
		},
		"FirstInvalid": {
			a:    "[]",
			b:    base,
			want: want{err: errors.Wrap(errors.New(errPolicyObject), errNormalizeA)},
		},
		"SecondInvalid": {
			a:    base,
			b:    "42",
			want: want{err: errors.Wrap(errors.New(errPolicyObject), errNormalizeB)},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := PoliciesEqual(tc.a, tc.b)
			if diff := cmp.Diff(tc.want.err, err, test.EquateErrors()); diff != "" {
				t.Errorf("PoliciesEqual(...): -want error, +got error:\n%s", diff)
			}
			if diff := cmp.Diff(tc.want.equal, got); diff != "" {
				t.Errorf("PoliciesEqual(...): -want, +got:\n%s", diff)
			}
		})
	}
}

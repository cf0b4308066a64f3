package common

import (
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// A Duration is a Go duration string such as 720h or 90m.
//
// It is a string rather than metav1.Duration on purpose: metav1.Duration fails to decode a
// value it cannot parse, and a list with one such object fails whole, so a single object
// stored before its CRD validated the field (or written around validation) would stop the
// provider from reconciling every object of its kind in every namespace. A string always
// decodes; Parse reports the bad value for that one object. The pattern below, and each field's
// CEL bounds, refuse bad values at admission, so new objects never hold a bad value. The CEL
// rules check the pattern before they call duration(): an error in a rule is not ratcheted,
// so an unguarded rule would refuse every write (status included) to an object stored with
// a bad value, and the provider could not even say what is wrong with it.
// +kubebuilder:validation:MaxLength=32
// +kubebuilder:validation:Pattern=`^([0-9]+([.][0-9]+)?(h|m|s))+$`
type Duration string

// Parse returns the duration, or an error that names the field and says what is wrong.
func (d Duration) Parse(field string) (time.Duration, error) {
	v, err := time.ParseDuration(string(d))
	if err != nil {
		return 0, errors.Errorf("%s %q is not a duration: write it like 90m, 24h or 720h (units ns, us, ms, s, m, h)", field, string(d))
	}
	return v, nil
}

// DurationOr parses d when it is set and returns def otherwise.
func DurationOr(d *Duration, field string, def time.Duration) (time.Duration, error) {
	if d == nil {
		return def, nil
	}
	return d.Parse(field)
}

package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// The test bed's servers have no systemd. Their init reads the few unit settings a service
// of a cloud image needs (what to run, with what environment, whether to restart it), so
// that user-data written for a real image works unchanged.
const (
	unitDir  = "/etc/systemd/system"
	wantsDir = unitDir + "/multi-user.target.wants"
)

// unit is a [Service] of Type=simple or exec.
type unit struct {
	Name             string
	ExecStart        []string
	Environment      []string
	WorkingDirectory string
	// Restart is "no", "always" or "on-failure".
	Restart      string
	RestartDelay time.Duration
}

// parseUnit reads the settings above from a unit file. Unknown keys are ignored, as they
// change nothing the test bed can model; an ExecStart that is missing is an error.
func parseUnit(name string, data []byte) (*unit, error) {
	u := &unit{Name: name, Restart: "no", RestartDelay: 100 * time.Millisecond}
	section := ""
	s := bufio.NewScanner(strings.NewReader(string(data)))
	for s.Scan() {
		line := strings.TrimSpace(s.Text())
		switch {
		case line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, ";"):
			continue
		case strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]"):
			section = line
			continue
		case section != "[Service]":
			continue
		}
		key, value, ok := strings.Cut(line, "=")
		if !ok {
			return nil, fmt.Errorf("unit %s: line %q is not key=value", name, line)
		}
		key, value = strings.TrimSpace(key), strings.TrimSpace(value)
		switch key {
		case "ExecStart":
			argv, err := splitCommand(value)
			if err != nil {
				return nil, fmt.Errorf("unit %s: ExecStart: %w", name, err)
			}
			u.ExecStart = argv
		case "Environment":
			words, err := splitCommand(value)
			if err != nil {
				return nil, fmt.Errorf("unit %s: Environment: %w", name, err)
			}
			u.Environment = append(u.Environment, words...)
		case "WorkingDirectory":
			u.WorkingDirectory = value
		case "Restart":
			u.Restart = value
		case "RestartSec":
			d, err := time.ParseDuration(value)
			if err != nil {
				d, err = time.ParseDuration(value + "s")
			}
			if err != nil {
				return nil, fmt.Errorf("unit %s: RestartSec %q: %w", name, value, err)
			}
			u.RestartDelay = d
		}
	}
	if len(u.ExecStart) == 0 {
		return nil, fmt.Errorf("unit %s has no ExecStart", name)
	}
	// systemd's prefixes ("-", "@", "+", ...) before the path are not modelled: refuse them
	// rather than run something else than the unit says.
	if !filepath.IsAbs(u.ExecStart[0]) {
		return nil, fmt.Errorf("unit %s: ExecStart %q is not an absolute path", name, u.ExecStart[0])
	}
	return u, nil
}

// restarts tells whether the unit is started again after its process exited with code.
func (u *unit) restarts(exitedCleanly bool) bool {
	switch u.Restart {
	case "always":
		return true
	case "on-failure", "on-abnormal", "on-abort":
		return !exitedCleanly
	}
	return false
}

// splitCommand splits a command line as systemd does for the common cases: words separated
// by blanks, double or single quotes grouping a word, backslash escapes inside quotes.
func splitCommand(s string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord := false
	var quote rune
	runes := []rune(s)
	for i := 0; i < len(runes); i++ {
		r := runes[i]
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0 && r == '\\' && i+1 < len(runes):
			i++
			cur.WriteRune(runes[i])
		case quote != 0:
			cur.WriteRune(r)
		case r == '"' || r == '\'':
			quote, inWord = r, true
		case r == ' ' || r == '\t':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("unterminated quote in %q", s)
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}

// enabledUnits lists the units enabled for the multi-user target, by name.
func enabledUnits() ([]string, error) {
	entries, err := os.ReadDir(wantsDir)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".service") {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	return names, nil
}

// loadUnit reads an enabled or named unit from the unit directory.
func loadUnit(name string) (*unit, error) {
	data, err := os.ReadFile(filepath.Join(unitDir, name))
	if err != nil {
		return nil, err
	}
	return parseUnit(name, data)
}

// unitName adds .service to a bare name, as systemctl does.
func unitName(s string) string {
	if strings.Contains(s, ".") {
		return s
	}
	return s + ".service"
}

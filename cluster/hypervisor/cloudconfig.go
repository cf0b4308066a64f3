package main

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"
)

// cloudConfig is the part of cloud-init's #cloud-config that the test bed's servers act on:
// files to write and commands to run on the first boot, commands to run on every boot. Any
// other key is ignored, as a real image without the module would.
type cloudConfig struct {
	WriteFiles []writeFile `json:"write_files"`
	// BootCmd runs on every boot, before anything else; RunCmd once per instance, last.
	BootCmd []command `json:"bootcmd"`
	RunCmd  []command `json:"runcmd"`
}

// writeFile is one entry of write_files.
type writeFile struct {
	Path        string `json:"path"`
	Content     string `json:"content"`
	Encoding    string `json:"encoding"`
	Permissions string `json:"permissions"`
	Append      bool   `json:"append"`
}

// command is a runcmd or bootcmd entry: a string is a shell line, a list is an argv (which
// cloud-init quotes into the script).
type command struct {
	line string
	argv []string
}

func (c *command) UnmarshalJSON(b []byte) error {
	if bytes.HasPrefix(bytes.TrimSpace(b), []byte("[")) {
		return yaml.Unmarshal(b, &c.argv)
	}
	return yaml.Unmarshal(b, &c.line)
}

// shell is the command as a line of a /bin/sh script.
func (c command) shell() string {
	if c.argv == nil {
		return c.line
	}
	quoted := make([]string, len(c.argv))
	for i, a := range c.argv {
		quoted[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(quoted, " ")
}

var errNotCloudConfig = errors.New("user-data is not a #cloud-config document")

// parseCloudConfig reads user-data. Only #cloud-config is understood: a server whose user-data
// is anything else boots and runs nothing, and says so in its console log.
func parseCloudConfig(userData []byte) (*cloudConfig, error) {
	if !bytes.HasPrefix(userData, []byte("#cloud-config")) {
		return nil, errNotCloudConfig
	}
	cc := &cloudConfig{}
	if err := yaml.Unmarshal(userData, cc); err != nil {
		return nil, fmt.Errorf("cannot parse #cloud-config: %w", err)
	}
	return cc, nil
}

// content decodes a write_files entry as cloud-init does (b64, gzip, or both).
func (f writeFile) content() ([]byte, error) {
	data := []byte(f.Content)
	switch f.Encoding {
	case "", "text/plain":
		return data, nil
	case "b64", "base64":
		return base64.StdEncoding.DecodeString(f.Content)
	case "gz", "gzip":
		return gunzip(data)
	case "gz+b64", "gzip+base64", "gz+base64", "gzip+b64":
		raw, err := base64.StdEncoding.DecodeString(f.Content)
		if err != nil {
			return nil, err
		}
		return gunzip(raw)
	}
	return nil, fmt.Errorf("unknown encoding %q", f.Encoding)
}

func gunzip(b []byte) ([]byte, error) {
	r, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	return io.ReadAll(r)
}

// mode is the entry's permissions (octal, as cloud-init reads them); 0644 when unset.
func (f writeFile) mode() (os.FileMode, error) {
	if f.Permissions == "" {
		return 0o644, nil
	}
	m, err := strconv.ParseUint(f.Permissions, 8, 32)
	if err != nil {
		return 0, fmt.Errorf("permissions %q: %w", f.Permissions, err)
	}
	return os.FileMode(m), nil
}

// write writes the entry, creating its directories.
func (f writeFile) write() error {
	if !filepath.IsAbs(f.Path) {
		return fmt.Errorf("write_files: path %q is not absolute", f.Path)
	}
	data, err := f.content()
	if err != nil {
		return fmt.Errorf("write_files %s: %w", f.Path, err)
	}
	mode, err := f.mode()
	if err != nil {
		return fmt.Errorf("write_files %s: %w", f.Path, err)
	}
	if err := os.MkdirAll(filepath.Dir(f.Path), 0o755); err != nil {
		return err
	}
	flags := os.O_WRONLY | os.O_CREATE | os.O_TRUNC
	if f.Append {
		flags = os.O_WRONLY | os.O_CREATE | os.O_APPEND
	}
	out, err := os.OpenFile(f.Path, flags, mode)
	if err != nil {
		return err
	}
	if _, err := out.Write(data); err != nil {
		_ = out.Close()
		return err
	}
	if err := out.Close(); err != nil {
		return err
	}
	return os.Chmod(f.Path, mode)
}

// script is the commands as one /bin/sh script.
func script(cmds []command) string {
	var b strings.Builder
	b.WriteString("#!/bin/sh\n")
	for _, c := range cmds {
		b.WriteString(c.shell())
		b.WriteByte('\n')
	}
	return b.String()
}

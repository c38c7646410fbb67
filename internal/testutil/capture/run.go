// Package capture records real Pi event streams into testdata/captures, the
// committed fixtures the mapper tests replay. Run it with
//
//	go test -tags realstack ./internal/testutil/capture -run TestCapture -args -update
//
// (add a scenario name to -run to redo just one). Without -update the test
// checks that the committed captures still show what each scenario claims.
package capture

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// Meta is written beside each capture as NAME.meta.json.
type Meta struct {
	Scenario      string   `json:"scenario"`
	Description   string   `json:"description"`
	PiVersion     string   `json:"piVersion"`
	Mode          string   `json:"mode"`
	Args          []string `json:"args"`
	ExitCode      int      `json:"exitCode"`
	Signal        string   `json:"signal,omitempty"`
	Stderr        string   `json:"stderr"`
	ModelRequests int      `json:"modelRequests"`
	// Requests describes each chat request the fake model got, in order.
	Requests     []RequestInfo `json:"requests"`
	ScriptErrors []string      `json:"scriptErrors,omitempty"`
}

// RequestInfo is what the fake model saw of one request.
type RequestInfo struct {
	Summary  bool     `json:"summary,omitempty"` // a compaction summary request
	Roles    []string `json:"roles"`
	Thinking any      `json:"reasoningEffort,omitempty"`
}

// Capture is one recorded run.
type Capture struct {
	Meta   Meta
	Stdout []byte // exactly what Pi wrote
	Stdin  []byte // RPC only: exactly what was written to Pi
}

// Records decodes the stdout lines (split on LF only, as Pi's framing says).
func (c *Capture) Records() ([]map[string]any, error) { return decodeLines(c.Stdout) }

func decodeLines(b []byte) ([]map[string]any, error) {
	var out []map[string]any
	for i, line := range bytes.Split(b, []byte("\n")) {
		line = bytes.TrimSuffix(line, []byte("\r"))
		if len(line) == 0 {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal(line, &m); err != nil {
			return nil, fmt.Errorf("line %d: %v: %.200q", i+1, err, line)
		}
		out = append(out, m)
	}
	return out, nil
}

// lineHook sees every stdout line as it arrives; the process is running.
type lineHook func(line []byte, rec map[string]any, p *os.Process)

// Recorder writes captures of one Pi version under its directory.
type Recorder struct {
	Dir string // testdata/captures/pi-VERSION
}

// Load reads a capture written by a Recorder.
func Load(dir, name string) (*Capture, error) {
	meta, err := loadMeta(dir, name)
	if err != nil {
		return nil, err
	}
	c := &Capture{Meta: meta}
	if c.Meta.Mode == "rpc" {
		if c.Stdin, err = os.ReadFile(filepath.Join(dir, name+".in.jsonl")); err != nil {
			return nil, err
		}
		c.Stdout, err = os.ReadFile(filepath.Join(dir, name+".out.jsonl"))
	} else {
		c.Stdout, err = os.ReadFile(filepath.Join(dir, name+".jsonl"))
	}
	return c, err
}

// loadMeta reads the meta file of capture name in dir.
func loadMeta(dir, name string) (Meta, error) {
	var m Meta
	b, err := os.ReadFile(filepath.Join(dir, name+".meta.json"))
	if err != nil {
		return m, err
	}
	err = json.Unmarshal(b, &m)
	return m, err
}

package rpc

import (
	"bytes"
	"container/list"
	"context"
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/trace"
)

// Command names Pi 1.6.0 knows (docs/rpc-commands.md and the binary). Any
// other type is traced as "pi.rpc unknown" so that a misbehaving
// controller cannot mint span names.
var knownCommands = map[string]bool{
	"prompt": true, "steer": true, "follow_up": true, "abort": true, "clear_queue": true,
	"new_session": true, "get_state": true, "get_messages": true, "set_model": true,
	"cycle_model": true, "get_available_models": true, "set_thinking_level": true,
	"cycle_thinking_level": true, "get_available_thinking_levels": true,
	"set_steering_mode": true, "set_follow_up_mode": true, "compact": true,
	"set_auto_compaction": true, "set_auto_retry": true, "abort_retry": true,
	"bash": true, "abort_bash": true, "get_session_stats": true, "export_html": true,
	"switch_session": true, "fork": true, "clone": true, "get_fork_messages": true,
	"get_entries": true, "get_tree": true, "get_last_assistant_text": true,
	"set_session_name": true, "get_commands": true,
}

const (
	// typeParse is what Pi calls a line that is not JSON.
	typeParse = "parse"
	// nameUnknown names commands whose type Pi does not know, or lack one.
	nameUnknown = "unknown"
	// typeUIResponse is the controller's answer to a dialog: not a command.
	typeUIResponse = "extension_ui_response"
)

// key correlates a command with its response: the id and the type as Pi
// will repeat them. Each is "" when absent, "s:" plus the text for a JSON
// string, and the compact JSON text for any other value (Pi echoes a
// numeric id as it came).
type key struct{ id, typ string }

func jsonKey(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return "s:" + s
	}
	// Pi re-serialises a number the JavaScript way: 7.0 comes back as 7.
	var f float64
	if json.Unmarshal(raw, &f) == nil && math.Abs(f) < 1e21 && (f == 0 || math.Abs(f) >= 1e-6) {
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	var buf bytes.Buffer
	if json.Compact(&buf, raw) == nil {
		return buf.String()
	}
	return string(raw)
}

// wireCommand is the part of a command the tracker reads.
type wireCommand struct {
	ID                json.RawMessage `json:"id"`
	Type              json.RawMessage `json:"type"`
	StreamingBehavior string          `json:"streamingBehavior"`
}

// command is one command awaiting its response.
type command struct {
	key  key
	name string // the type as traced: a known command, "parse" or "unknown"
	typ  string // the type as sent, when it is a string
	id   string // pi.rpc.id, when the command had one
	at   time.Time
	// streaming is the prompt's streamingBehavior.
	streaming string

	// decision is what the prompt's response will say, read ahead;
	// claimed is set when that response was found in the held records.
	decision decision
	claimed  bool
	// deferred is a started prompt whose span waits for the run before it
	// to settle, so that it can open its own root.
	deferred bool

	span trace.Span
	ctx  context.Context // holds span, for dialogs opened while it waits
	elem *list.Element

	// bash output
	chunks, bytes int64
}

// decodeCommand reads one controller line. ok is false for an
// extension_ui_response, which is not a command.
func decodeCommand(rec []byte, at time.Time) (c *command, ok bool) {
	c = &command{at: at}
	if !json.Valid(rec) {
		c.name, c.typ = typeParse, typeParse
		c.key = key{typ: "s:" + typeParse}
		return c, true
	}
	trimmed := bytes.TrimLeft(rec, " \t\r\n")
	if len(trimmed) == 0 || trimmed[0] != '{' {
		// Pi answers "Unknown command: undefined" with neither id nor command.
		c.name = nameUnknown
		return c, true
	}
	var w wireCommand
	if err := json.Unmarshal(rec, &w); err != nil {
		c.name = nameUnknown
		return c, true
	}
	var typ string
	_ = json.Unmarshal(w.Type, &typ)
	if typ == typeUIResponse {
		return nil, false
	}
	c.key = key{id: jsonKey(w.ID), typ: jsonKey(w.Type)}
	c.typ = typ
	if knownCommands[typ] {
		c.name = typ
	} else {
		c.name = nameUnknown
	}
	if len(w.ID) > 0 {
		var s string
		if json.Unmarshal(w.ID, &s) == nil {
			c.id = s
		} else {
			c.id = strings.TrimPrefix(c.key.id, "s:")
		}
		c.id = clip(c.id, 128)
	}
	c.streaming = w.StreamingBehavior
	return c, true
}

// wireResponse is the part of a response the tracker reads.
type wireResponse struct {
	ID      json.RawMessage `json:"id"`
	Command json.RawMessage `json:"command"`
	Success bool            `json:"success"`
	Error   string          `json:"error"`
	Data    json.RawMessage `json:"data"`
}

func (r *wireResponse) key() key { return key{id: jsonKey(r.ID), typ: jsonKey(r.Command)} }

// bashID is the id of the bash command r answers, as a string (none: "");
// ok is false for any other response, or an id of another kind.
func (r *wireResponse) bashID() (id string, ok bool) {
	var name string
	if json.Unmarshal(r.Command, &name) != nil || name != "bash" {
		return "", false
	}
	if len(r.ID) > 0 && json.Unmarshal(r.ID, &id) != nil {
		return "", false
	}
	return id, true
}

// responseData is the union of the data fields the tracker reads.
type responseData struct {
	Disposition string `json:"disposition"`
	SessionID   string `json:"sessionId"`
	Cancelled   *bool  `json:"cancelled"`
	ExitCode    *int   `json:"exitCode"`
	Truncated   *bool  `json:"truncated"`
	// Model is get_state's and cycle_model's model; set_model's data is
	// the model itself (modelData).
	Model *modelData `json:"model"`
	modelData
}

// modelData is the part of Pi's Model object the tracker reads: which
// model, and the endpoint its calls go to.
type modelData struct {
	ID       string `json:"id"`
	Provider string `json:"provider"`
	BaseURL  string `json:"baseUrl"`
}

func (r *wireResponse) data() responseData {
	var d responseData
	if len(r.Data) > 0 && r.Data[0] == '{' {
		_ = json.Unmarshal(r.Data, &d)
	}
	return d
}

// pendingTable holds commands awaiting a response, first in first out per
// key, with a global order for eviction.
type pendingTable struct {
	byKey map[key][]*command
	order *list.List
}

func (p *pendingTable) len() int { return p.order.Len() }

func (p *pendingTable) add(c *command) {
	p.byKey[c.key] = append(p.byKey[c.key], c)
	c.elem = p.order.PushBack(c)
}

// peek returns the oldest pending command with key k.
func (p *pendingTable) peek(k key) *command {
	if q := p.byKey[k]; len(q) > 0 {
		return q[0]
	}
	return nil
}

func (p *pendingTable) remove(c *command) {
	q := p.byKey[c.key]
	if i := slices.Index(q, c); i >= 0 {
		q = slices.Delete(q, i, i+1)
	}
	if len(q) == 0 {
		// Drop the key: ids are unique, so kept keys would grow forever.
		delete(p.byKey, c.key)
	} else {
		p.byKey[c.key] = q
	}
	if c.elem != nil {
		p.order.Remove(c.elem)
		c.elem = nil
	}
}

// oldest returns the command waiting longest.
func (p *pendingTable) oldest() *command {
	if e := p.order.Front(); e != nil {
		return e.Value.(*command)
	}
	return nil
}

// latestOpen returns the most recent command whose span is open.
func (p *pendingTable) latestOpen() *command {
	for e := p.order.Back(); e != nil; e = e.Prev() {
		if c := e.Value.(*command); c.span != nil {
			return c
		}
	}
	return nil
}

// deferredPrompt returns the oldest started prompt still waiting for its root.
func (p *pendingTable) deferredPrompt() *command {
	for e := p.order.Front(); e != nil; e = e.Next() {
		if c := e.Value.(*command); c.deferred {
			return c
		}
	}
	return nil
}

func (p *pendingTable) all() []*command { return listAll[*command](p.order) }

// listAll returns l's values, front to back.
func listAll[T any](l *list.List) []T {
	out := make([]T, 0, l.Len())
	for e := l.Front(); e != nil; e = e.Next() {
		out = append(out, e.Value.(T))
	}
	return out
}

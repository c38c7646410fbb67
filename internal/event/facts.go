package event

import "encoding/json"

// The facts below are read from rare records (a compaction's end, an
// appended entry, a system message) so that the mapper reads typed fields
// and never decodes JSON itself. Their values are small and seldom seen:
// encoding/json reads them, as it read them in the mapper before.

// Compaction is what a compaction_end's result says.
type Compaction struct {
	Summary              string `json:"summary"`
	TokensBefore         *int64 `json:"tokensBefore"`
	EstimatedTokensAfter *int64 `json:"estimatedTokensAfter"`
	Usage                *Usage `json:"usage"`
}

// ToolDef is one tool a system message declares.
type ToolDef struct {
	Name        string `json:"name"`
	Description string `json:"description"`
}

// noteFacts sets the typed fields read from a decoded record's raw ones.
func (ev *Event) noteFacts(opts Options) {
	switch ev.Type {
	case TypeEntryAppended:
		ev.EntryType = entryType(ev.Entry)
	case TypeCompactionEnd:
		ev.Compaction = compaction(ev.Result)
	}
	switch m := ev.Message; {
	case m == nil:
	case opts.NoDeclarations:
		m.ToolDefs, m.Ordered = nil, nil
		m.noteText()
	default:
		m.NoteFacts()
	}
}

// entryType names an appended entry without reading its data: its type,
// and its customType after a colon when it has one.
func entryType(entry json.RawMessage) string {
	var e struct {
		Type       string `json:"type"`
		CustomType string `json:"customType"`
	}
	if json.Unmarshal(entry, &e) != nil {
		return ""
	}
	if e.CustomType != "" {
		return e.Type + ":" + e.CustomType
	}
	return e.Type
}

// compaction reads a compaction_end's result; nil when there is none or it
// is no object of that shape.
func compaction(raw json.RawMessage) *Compaction {
	if len(raw) == 0 {
		return nil
	}
	var c Compaction
	if json.Unmarshal(raw, &c) != nil {
		return nil
	}
	return &c
}

// Section is one named section of a system message.
type Section struct {
	Name string
	// Text is the section's raw value; null removes the section.
	Text json.RawMessage
}

// NoteFacts sets the typed fields read from a decoded message's raw ones:
// ToolDefs, a user message's TextChars and a system message's Ordered
// sections.
func (m *Message) NoteFacts() {
	m.noteTools()
	m.noteText()
	m.Ordered = nil
	if m.Role == "system" && len(m.Raw) > 0 {
		m.Ordered = orderedSections(m.Raw)
	}
}

// noteText counts the characters of a user message's text.
func (m *Message) noteText() {
	if m.Role == "user" {
		m.TextChars = ContentChars(m.Content)
	}
}

// orderedSections reads a system message's sections in its key order, as
// the message gives them: a later system message changes named sections,
// and what captured content renders keeps their order.
func orderedSections(msg json.RawMessage) []Section {
	var sections []byte
	found, slow := false, false
	ok := Members(msg, func(k, v []byte) bool {
		switch {
		case string(k) == "sections":
			slow, found, sections = found, true, v
		case !plainKey(k) || Key(k, "sections"):
			slow = true
		}
		return !slow
	})
	if !ok || slow {
		// What the walk cannot settle as encoding/json would (a key twice,
		// in another case, or JSON it cannot walk) is read by it: rare.
		var f struct {
			Sections json.RawMessage `json:"sections"`
		}
		if json.Unmarshal(msg, &f) != nil {
			return nil
		}
		sections = f.Sections
	}
	var list []Section
	Members(sections, func(k, v []byte) bool {
		list = append(list, Section{Name: string(k), Text: v})
		return true
	})
	return list
}

// noteTools sets ToolDefs from the declarations in Tools, then ToolsAdded:
// those that read as an object with a name.
func (m *Message) noteTools() {
	m.ToolDefs = nil
	for _, list := range [][]json.RawMessage{m.Tools, m.ToolsAdded} {
		for _, raw := range list {
			var t ToolDef
			if json.Unmarshal(raw, &t) != nil || t.Name == "" {
				continue
			}
			m.ToolDefs = append(m.ToolDefs, t)
		}
	}
}

package event

import "bytes"

// The fast decoders fill an Event from the members validate recorded,
// without reflection. They handle the shapes Pi writes: exact keys, each
// once, with values of the expected kinds. Anything else (a key that only
// matches ignoring case or after unescaping, a duplicate key, a value of
// another kind) makes them return false, and the record is decoded by
// encoding/json as before, so the result is the same either way. A usage
// is read by the walker nested's child messages use too (ReadUsage), which
// takes folded and repeated keys as encoding/json does.

// JSON names of the fields, for the case-folded matches encoding/json
// also accepts; a key that folds to one of them takes the slow path.
var (
	eventNames = []string{"Type", "version", "id", "timestamp", "cwd", "messages", "willRetry", "aborted",
		"message", "toolResults", "assistantMessageEvent", "usage", "toolCallId", "toolName", "args",
		"partialResult", "result", "isError", "durationMs", "steering", "followUp", "entry", "name", "level",
		"reason", "errorMessage", "attempt", "maxAttempts", "delayMs", "success", "finalError", "source",
		"delta", "extensionPath", "event", "error", "method", "command", "data", "timeout", "parentToolCallId",
		"isTerminal"}
	liteNames    = []string{"assistantMessageEvent", "message"}
	messageNames = []string{"role", "content", "api", "provider", "model", "responseModel", "responseId",
		"usage", "stopReason", "errorMessage", "rawStopReason", "durationMs", "timestamp", "thinkingLevel",
		"toolCallId", "toolName", "isError", "sections", "toolsAdded", "tools", "duration", "ttft", "completedAt"}
	ameNames = []string{"type", "contentIndex", "delta", "id", "toolName"}
)

// recordType returns the top-level "type" when exactly one key spells it
// and its value is a plain string; ok is false when only encoding/json can
// say (escaped or case-variant keys, duplicates, other values).
func (s *scan) recordType(rec []byte) (typ string, ok bool) {
	if s.overflow {
		return "", false
	}
	found := -1
	for k := range s.n {
		m := &s.members[k]
		key := rec[m.keyStart:m.keyEnd]
		switch {
		case string(key) == "type":
			if found >= 0 {
				return "", false
			}
			found = k
		case !plainKey(key), Key(key, "type"):
			return "", false
		}
	}
	if found < 0 {
		return "", false
	}
	m := &s.members[found]
	v := rec[m.valStart:m.valEnd]
	if v[0] != '"' || bytes.IndexByte(v, '\\') >= 0 {
		return "", false
	}
	return internType(v[1 : len(v)-1]), true
}

// decodeLite is the message_update decoding with content off: only the
// assistantMessageEvent's type and contentIndex, and whether a cumulative
// "message" (Pi before 1.x) is present. ame, when not nil, is storage to
// reuse for the AssistantMessageEvent. With alias, raw JSON fields point
// into rec instead of being copied (see Decoder).
func (s *scan) decodeLite(rec []byte, ev *Event, ame *AssistantMessageEvent, alias bool) bool {
	var a AssistantMessageEvent
	var sn seen
	var raw []byte
	for k := range s.n {
		m := &s.members[k]
		key, v := rec[m.keyStart:m.keyEnd], rec[m.valStart:m.valEnd]
		switch string(key) {
		case "assistantMessageEvent":
			if !sn.first(0) {
				return false
			}
			switch {
			case v[0] == 'n':
			case v[0] == '{' && s.ame.at == k && s.ame.valid:
				if !s.decodeAMESub(rec, &a) {
					return false
				}
			case v[0] == '{':
				if !decodeAMELite(v, &a) {
					return false
				}
			default:
				return false
			}
		case "message":
			if !sn.first(1) {
				return false
			}
			raw = v
		default:
			if !plainKey(key) || foldsToAny(key, liteNames) {
				return false
			}
		}
	}
	if ame == nil {
		ame = new(AssistantMessageEvent)
	}
	*ame = a
	ev.Type = TypeMessageUpdate
	ev.AssistantMessageEvent = ame
	if raw != nil {
		decodeRaw(raw, &ev.RawMessage, alias)
	}
	return true
}

// decodeAMESub is decodeAMELite from the members the scan recorded.
func (s *scan) decodeAMESub(rec []byte, a *AssistantMessageEvent) bool {
	var sn seen
	for k := range s.ame.n {
		m := &s.ame.m[k]
		if !a.liteMember(rec[m.keyStart:m.keyEnd], rec[m.valStart:m.valEnd], &sn) {
			return false
		}
	}
	return true
}

func decodeAMELite(v []byte, a *AssistantMessageEvent) bool {
	var sn seen
	return members(v, func(key, val []byte) bool { return a.liteMember(key, val, &sn) })
}

// liteMember decodes one member of an assistantMessageEvent with content
// off: its type and contentIndex; the rest is skipped.
func (a *AssistantMessageEvent) liteMember(key, val []byte, sn *seen) bool {
	switch string(key) {
	case "type":
		return sn.first(0) && decodeString(val, &a.Type)
	case "contentIndex":
		return sn.first(1) && ReadInt(val, &a.ContentIndex)
	}
	return plainKey(key) && !foldsToAny(key, ameNames[:2])
}

func decodeAME(v []byte, a *AssistantMessageEvent) bool {
	if v[0] != '{' {
		return false
	}
	var sn seen
	return members(v, func(key, val []byte) bool {
		switch string(key) {
		case "delta":
			return sn.first(2) && decodeString(val, &a.Delta)
		case "id":
			return sn.first(3) && decodeString(val, &a.ID)
		case "toolName":
			return sn.first(4) && decodeString(val, &a.ToolName)
		}
		// type, contentIndex, or a key no field takes
		return a.liteMember(key, val, &sn) && !foldsToAny(key, ameNames[2:])
	})
}

// decodeFull fills every field of ev the record carries, as
// json.Unmarshal into Event does, then the message of message_* records,
// into a Decoder's storage st (nil: new storage).
func (s *scan) decodeFull(rec []byte, typ string, ev *Event, alias bool, st *storage) bool {
	var sn seen
	for k := range s.n {
		m := &s.members[k]
		key, v := rec[m.keyStart:m.keyEnd], rec[m.valStart:m.valEnd]
		var good bool
		switch string(key) {
		case "type":
			good = true // the caller has it
		case "version":
			good = sn.first(1) && ReadInt(v, &ev.Version)
		case "id":
			good = sn.first(2) && decodeString(v, &ev.ID)
		case "timestamp":
			good = sn.first(3) && decodeString(v, &ev.Timestamp)
		case "cwd":
			good = sn.first(4) && decodeString(v, &ev.Cwd)
		case "messages":
			good = sn.first(5) && decodeRawList(v, &ev.Messages, alias)
		case "willRetry":
			good = sn.first(6) && ReadPtr(v, &ev.WillRetry, ReadBool, nil)
		case "aborted":
			good = sn.first(7) && ReadPtr(v, &ev.Aborted, ReadBool, nil)
		case "message":
			good = sn.first(8)
			decodeRaw(v, &ev.RawMessage, alias)
		case "toolResults":
			good = sn.first(9) && decodeRawList(v, &ev.ToolResults, alias)
		case "assistantMessageEvent":
			good = sn.first(10) && ReadPtr(v, &ev.AssistantMessageEvent, decodeAME, nil)
		case "usage":
			good = sn.first(11) && ReadPtr(v, &ev.Usage, decodeUsage, nil)
		case "toolCallId":
			good = sn.first(12) && decodeString(v, &ev.ToolCallID)
		case "toolName":
			good = sn.first(13) && st.text(v, &ev.ToolName, slotToolName)
		case "args":
			good = sn.first(14)
			decodeRaw(v, &ev.Args, alias)
		case "partialResult":
			good = sn.first(15)
			decodeRaw(v, &ev.PartialResult, alias)
		case "result":
			good = sn.first(16)
			decodeRaw(v, &ev.Result, alias)
		case "isError":
			good = sn.first(17) && ReadBool(v, &ev.IsError)
		case "durationMs":
			good = sn.first(18) && ReadPtr(v, &ev.DurationMs, ReadFloat, nil)
		case "steering":
			good = sn.first(19) && decodeRawList(v, &ev.Steering, alias)
		case "followUp":
			good = sn.first(20) && decodeRawList(v, &ev.FollowUp, alias)
		case "entry":
			good = sn.first(21)
			decodeRaw(v, &ev.Entry, alias)
		case "name":
			good = sn.first(22) && ReadPtr(v, &ev.Name, decodeString, nil)
		case "level":
			good = sn.first(23) && decodeString(v, &ev.Level)
		case "reason":
			good = sn.first(24) && decodeString(v, &ev.Reason)
		case "errorMessage":
			good = sn.first(25) && decodeString(v, &ev.ErrorMessage)
		case "attempt":
			good = sn.first(26) && ReadInt(v, &ev.Attempt)
		case "maxAttempts":
			good = sn.first(27) && ReadInt(v, &ev.MaxAttempts)
		case "delayMs":
			good = sn.first(28) && ReadFloat(v, &ev.DelayMs)
		case "success":
			good = sn.first(29) && ReadPtr(v, &ev.Success, ReadBool, nil)
		case "finalError":
			good = sn.first(30) && decodeString(v, &ev.FinalError)
		case "source":
			good = sn.first(31) && decodeString(v, &ev.Source)
		case "delta":
			good = sn.first(32) && decodeString(v, &ev.Delta)
		case "extensionPath":
			good = sn.first(33) && decodeString(v, &ev.ExtensionPath)
		case "event":
			good = sn.first(34) && decodeString(v, &ev.Event)
		case "error":
			good = sn.first(35) && decodeString(v, &ev.Error)
		case "method":
			good = sn.first(36) && decodeString(v, &ev.Method)
		case "command":
			good = sn.first(37) && decodeString(v, &ev.Command)
		case "data":
			good = sn.first(38)
			decodeRaw(v, &ev.Data, alias)
		case "timeout":
			good = sn.first(39) && ReadFloat(v, &ev.TimeoutMs)
		case "parentToolCallId":
			good = sn.first(40) && decodeString(v, &ev.ParentToolCallID)
		case "isTerminal":
			good = sn.first(41) && ReadPtr(v, &ev.IsTerminal, ReadBool, nil)
		default:
			good = plainKey(key) && !foldsToAny(key, eventNames)
		}
		if !good {
			return false
		}
	}
	ev.Type = typ
	// turn_end repeats the assistant message that message_end already gave.
	if len(ev.RawMessage) > 0 && typ != TypeTurnEnd && typ != TypeMessageUpdate && string(ev.RawMessage) != "null" {
		msg := st.message()
		var good bool
		if s.msg.valid { // the only "message": a second one failed above
			good = s.decodeMessageSub(rec, msg, alias, st)
		} else {
			good = decodeMessage(ev.RawMessage, msg, alias, st)
		}
		if !good {
			return false
		}
		msg.Raw = ev.RawMessage
		ev.Message = msg
	}
	return true
}

func decodeMessage(v []byte, msg *Message, alias bool, st *storage) bool {
	if v[0] != '{' {
		return false
	}
	var sn seen
	return members(v, func(key, val []byte) bool { return msg.member(key, val, &sn, alias, st) })
}

// decodeMessageSub is decodeMessage from the members the scan recorded:
// the message's content, most of a record, is not walked again.
func (s *scan) decodeMessageSub(rec []byte, msg *Message, alias bool, st *storage) bool {
	var sn seen
	for k := range s.msg.n {
		m := &s.msg.m[k]
		if !msg.member(rec[m.keyStart:m.keyEnd], rec[m.valStart:m.valEnd], &sn, alias, st) {
			return false
		}
	}
	return true
}

// member decodes one member of a message; the pointer fields point into
// st's storage when it is transient.
func (msg *Message) member(key, val []byte, sn *seen, alias bool, st *storage) bool {
	switch string(key) {
	case "role":
		return sn.first(0) && decodeString(val, &msg.Role)
	case "content":
		decodeRaw(val, &msg.Content, alias)
		return sn.first(1)
	case "api":
		return sn.first(2) && st.text(val, &msg.API, slotAPI)
	case "provider":
		return sn.first(3) && st.text(val, &msg.Provider, slotProvider)
	case "model":
		return sn.first(4) && st.text(val, &msg.Model, slotModel)
	case "responseModel":
		return sn.first(5) && st.text(val, &msg.ResponseModel, slotResponseModel)
	case "responseId":
		return sn.first(6) && decodeString(val, &msg.ResponseID)
	case "usage":
		return sn.first(7) && ReadPtr(val, &msg.Usage, decodeUsage, st.usage())
	case "stopReason":
		return sn.first(8) && decodeString(val, &msg.StopReason)
	case "errorMessage":
		return sn.first(9) && decodeString(val, &msg.ErrorMessage)
	case "rawStopReason":
		return sn.first(10) && decodeString(val, &msg.RawStopReason)
	case "durationMs":
		return sn.first(11) && ReadPtr(val, &msg.DurationMs, ReadFloat, st.duration(0))
	case "timestamp":
		return sn.first(12) && ReadFloat(val, &msg.Timestamp)
	case "thinkingLevel":
		return sn.first(13) && st.text(val, &msg.ThinkingLevel, slotThinkingLevel)
	case "toolCallId":
		return sn.first(14) && decodeString(val, &msg.ToolCallID)
	case "toolName":
		return sn.first(15) && st.text(val, &msg.ToolName, slotToolName)
	case "isError":
		return sn.first(16) && ReadBool(val, &msg.IsError)
	case "sections":
		return sn.first(17) && decodeSections(val, &msg.Sections)
	case "toolsAdded":
		return sn.first(18) && decodeRawList(val, &msg.ToolsAdded, alias)
	case "tools":
		return sn.first(19) && decodeRawList(val, &msg.Tools, alias)
	case "duration":
		return sn.first(20) && ReadPtr(val, &msg.Duration, ReadFloat, st.duration(1))
	case "ttft":
		return sn.first(21) && ReadPtr(val, &msg.TTFT, ReadFloat, st.duration(2))
	case "completedAt":
		return sn.first(22) && ReadFloat(val, &msg.CompletedAt)
	}
	return plainKey(key) && !foldsToAny(key, messageNames)
}

func decodeSections(v []byte, dst *map[string]*string) bool {
	switch v[0] {
	case 'n':
		*dst = nil
		return true
	case '{':
	default:
		return false
	}
	m := map[string]*string{}
	if !members(v, func(key, val []byte) bool {
		var p *string
		if bytes.IndexByte(key, '\\') >= 0 || !ReadPtr(val, &p, decodeString, nil) {
			return false
		}
		m[string(key)] = p
		return true
	}) {
		return false
	}
	*dst = m
	return true
}

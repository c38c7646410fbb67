package event

import "bytes"

// storage is what a Decoder decodes into from record to record.
type storage struct {
	ame AssistantMessageEvent
	// With Options.Transient: a record's Message and what it points to.
	transient bool
	msg       Message
	usageBuf  Usage
	durations [3]float64 // durationMs, duration, ttft

	// recent are the last values of fields that repeat from record to
	// record (every answer's api, provider and model): a value equal to
	// one takes it rather than a new copy.
	recent [slots]string
}

// The fields storage.recent remembers.
const (
	slotAPI = iota
	slotProvider
	slotModel
	slotResponseModel
	slotThinkingLevel
	slotToolName
	slots
)

// text is decodeString for a field whose values repeat (st nil: Decode,
// which remembers none).
func (st *storage) text(v []byte, dst *string, slot int) bool {
	if st == nil || v[0] != '"' {
		return decodeString(v, dst)
	}
	in := v[1 : len(v)-1]
	if r := st.recent[slot]; string(in) == r && bytes.IndexByte(in, '\\') < 0 {
		*dst = r
		return true
	}
	if !decodeString(v, dst) {
		return false
	}
	st.recent[slot] = *dst
	return true
}

// message is where a record's Message is decoded: st's storage, cleared,
// or (st nil: Decode) a new one.
func (st *storage) message() *Message {
	if st == nil || !st.transient {
		return new(Message)
	}
	st.msg = Message{}
	return &st.msg
}

// usage and duration are where a message's Usage and its i-th duration
// are decoded: st's storage, or (nil) a new allocation.
func (st *storage) usage() *Usage {
	if st == nil || !st.transient {
		return nil
	}
	return &st.usageBuf
}

func (st *storage) duration(i int) *float64 {
	if st == nil || !st.transient {
		return nil
	}
	return &st.durations[i]
}

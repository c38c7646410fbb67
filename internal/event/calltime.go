package event

import "time"

// CallTime is when the model call behind an assistant message started and
// how long it took, from the message's own fields: Pi's timestamp (the
// call's start) and durationMs, or oh-my-pi's completedAt (its end) and
// duration. ok is false when the message gives no duration; start is then
// its timestamp, zero when it has none.
func (m *Message) CallTime() (start time.Time, d time.Duration, ok bool) {
	switch {
	case m.DurationMs != nil && *m.DurationMs >= 0:
		return epochMs(m.Timestamp), ms(*m.DurationMs), true
	case m.Duration != nil && *m.Duration >= 0 && m.CompletedAt > 0:
		// oh-my-pi's timestamp is taken before the request is built, so
		// the call is placed back from its end.
		d := ms(*m.Duration)
		return epochMs(m.CompletedAt).Add(-d), d, true
	}
	return epochMs(m.Timestamp), 0, false
}

// FirstToken is the time to the first token oh-my-pi measured for the call,
// if the message says.
func (m *Message) FirstToken() (time.Duration, bool) {
	if m.TTFT == nil || *m.TTFT < 0 {
		return 0, false
	}
	return ms(*m.TTFT), true
}

func epochMs(v float64) time.Time {
	if v <= 0 {
		return time.Time{}
	}
	sec := int64(v / 1000)
	return time.Unix(sec, int64((v-float64(sec)*1000)*float64(time.Millisecond)))
}

func ms(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }

package genaimsg

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"

	"github.com/pi-otel/pi-otel/internal/content/redact"
)

// scrubJSON copies a JSON value token by token, keeping key order and number
// spelling, with every string passed through scrub. Scalars under a
// credential-named key (and everything nested below one) are replaced by a
// marker, because a secret stored as {"password": "hunter2"} does not look
// like a secret on its own.
func scrubJSON(raw []byte, scrub func(string) string) (json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var out bytes.Buffer
	if err := copyValue(dec, &out, scrub, ""); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("trailing data after JSON value")
	}
	return out.Bytes(), nil
}

// copyValue copies one value from dec to out. hide, when set, is the marker
// replacing every string and number in the value.
func copyValue(dec *json.Decoder, out *bytes.Buffer, scrub func(string) string, hide string) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			out.WriteByte('{')
			for i := 0; dec.More(); i++ {
				if i > 0 {
					out.WriteByte(',')
				}
				kt, err := dec.Token()
				if err != nil {
					return err
				}
				key, _ := kt.(string)
				writeString(out, key)
				out.WriteByte(':')
				h := hide
				if h == "" {
					h, _ = redact.SensitiveKey(key)
				}
				if err := copyValue(dec, out, scrub, h); err != nil {
					return err
				}
			}
			out.WriteByte('}')
		case '[':
			out.WriteByte('[')
			for i := 0; dec.More(); i++ {
				if i > 0 {
					out.WriteByte(',')
				}
				if err := copyValue(dec, out, scrub, hide); err != nil {
					return err
				}
			}
			out.WriteByte(']')
		default:
			return errors.New("unexpected " + t.String())
		}
		_, err := dec.Token() // the closing delimiter
		return err
	case string:
		if hide != "" {
			writeString(out, hide)
		} else {
			writeString(out, scrub(t))
		}
	case json.Number:
		if hide != "" {
			writeString(out, hide)
		} else {
			out.WriteString(t.String())
		}
	case bool:
		if t {
			out.WriteString("true")
		} else {
			out.WriteString("false")
		}
	case nil:
		out.WriteString("null")
	}
	return nil
}

func writeString(out *bytes.Buffer, s string) {
	enc := json.NewEncoder(out)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	out.Truncate(out.Len() - 1)
}

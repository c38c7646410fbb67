package event

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// referenceHeader is the header as the readers before ReadHeader decoded
// it: encoding/json into a struct, with a version that also reads "3".
type referenceHeader struct {
	Type          string            `json:"type"`
	Version       *referenceVersion `json:"version"`
	ID            string            `json:"id"`
	ParentSession string            `json:"parentSession"`
	Timestamp     string            `json:"timestamp"`
	Cwd           string            `json:"cwd"`
	Provider      string            `json:"provider"`
	Model         string            `json:"model"`
	ModelID       string            `json:"modelId"`
}

type referenceVersion struct {
	n  int
	ok bool
}

func (v *referenceVersion) UnmarshalJSON(b []byte) error {
	n, err := strconv.Atoi(strings.Trim(string(b), `"`))
	v.n, v.ok = n, err == nil
	return nil
}

// referenceRead is ReadHeader by encoding/json: Valid as json.Valid says
// of an object, the fields as it decodes them, and a field mistyped when
// decoding a struct of that field alone fails.
func referenceRead(t *testing.T, b []byte) Header {
	if !json.Valid(b) || !bytes.HasPrefix(bytes.TrimLeft(b, " \t\r\n"), []byte("{")) {
		return Header{Version: 1}
	}
	var r referenceHeader
	if err := json.Unmarshal(b, &r); err != nil {
		var te *json.UnmarshalTypeError
		if !errors.As(err, &te) {
			t.Fatalf("%q: encoding/json: %v", b, err)
		}
	}
	h := Header{Type: r.Type, ID: r.ID, ParentSession: r.ParentSession, Timestamp: r.Timestamp, Cwd: r.Cwd,
		Provider: r.Provider, Model: r.Model, ModelID: r.ModelID, Version: 1, Object: true, Valid: true}
	if r.Version != nil && r.Version.ok {
		h.Version = r.Version.n
	}
	for i, key := range headerKeys {
		one := reflect.New(reflect.StructOf([]reflect.StructField{{
			Name: "F", Type: reflect.TypeFor[string](), Tag: reflect.StructTag(`json:"` + key + `"`),
		}}))
		if json.Unmarshal(b, one.Interface()) != nil {
			h.Mistyped |= 1 << i
		}
	}
	return h
}

var headerCases = []string{
	`{"type":"session","version":3,"id":"s1","timestamp":"2026-11-30T09:00:00.000Z","cwd":"/w","parentSession":"/p/a_b.jsonl"}`,
	`{"type":"session","id":"x","provider":"anthropic","modelId":"m","model":"old"}`,
	`{"type":"session","version":"3","id":"a\u00e9\"b","cwd":"C:\\Users\\x"}`,
	`{"type":"session","id":"a","id":"b","ID":"c","type":5}`,
	`{"TYPE":"session","Id":"x","parentſession":"p","thinKingLevel":"high","modelıd":"no"}`,
	`{"type":"session","id":null,"version":null,"cwd":{"a":[1,"}"]}}`,
	`{"type":"session","version":3.0,"id":"x","timestamp":true}`,
	`{"type":"session","version":"+7","id":"x"} x`,
	`{"type":"session","id":"x","bad":tru}`,
	`{"type":"session","id":"x","bad":"\q"}`,
	"{\"type\":\"session\",\"id\":\"\xff\xfe\",\"cwd\":\"\xed\xa0\x80\"}",
	"{\"type\":\"session\",\"id\":\"x\"}\xff",
	`{"type":"message","id":"e1","parentId":null,"message":{"role":"user"}}`,
	`{"type":"title","v":1,"title":"t"}`,
	`{"\u0074ype":"session","i\u0064":"esc","version":"\u0033"}`,
	`["type","session"]`, `null`, `"session"`, ``, ` {} `, `{`,
}

func TestReadHeader(t *testing.T) {
	for _, c := range headerCases {
		if got, want := ReadHeader([]byte(c)), referenceRead(t, []byte(c)); got.Valid && got != want {
			t.Errorf("%q:\n got %+v\nwant %+v", c, got, want)
		} else if got.Valid != want.Valid {
			t.Errorf("%q: valid %v, want %v", c, got.Valid, want.Valid)
		}
	}
	h := ReadHeader([]byte(headerCases[0]))
	if !h.IsSession() || h.ID != "s1" || h.Version != 3 || h.ParentSession != "/p/a_b.jsonl" {
		t.Errorf("header %+v", h)
	}
}

// FuzzReadHeader: a line encoding/json reads as an object gives every
// field as it reads it, any other line is not Valid; Object is what
// Members says, whatever the line.
//
//	go test ./internal/event -run '^$' -fuzz FuzzReadHeader
func FuzzReadHeader(f *testing.F) {
	for _, c := range headerCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, want := ReadHeader(b), referenceRead(t, b)
		if got.Valid != want.Valid {
			t.Fatalf("%q: valid %v, want %v", b, got.Valid, want.Valid)
		}
		if got.Object != Members(b, func(_, _ []byte) bool { return true }) {
			t.Fatalf("%q: object %v, not what Members says", b, got.Object)
		}
		if !got.Object && got != (Header{Version: 1}) {
			t.Fatalf("%q: no object, yet %+v", b, got)
		}
		if got.Valid && got != want {
			t.Fatalf("%q:\n got %+v\nwant %+v", b, got, want)
		}
	})
}

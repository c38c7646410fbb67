package session

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"
)

// The readers of a first line as they were before event.ReadHeader, with
// encoding/json: Sniff, Starts and ClassifyHead must answer as they did.

func referenceSniff(first []byte) bool {
	b := bytes.TrimRight(first, "\r\n")
	var h struct{ Type, ID string }
	err := json.Unmarshal(b, &h)
	var te *json.UnmarshalTypeError
	return isObject(b) && json.Valid(b) && (err == nil || errors.As(err, &te)) && h.Type == typeSession && h.ID != ""
}

func referenceType(b []byte) (string, bool) {
	var rec struct {
		Type string `json:"type"`
	}
	return rec.Type, json.Unmarshal(b, &rec) == nil
}

func referenceStarts(first []byte) bool {
	first = bytes.TrimRight(first, "\r\n")
	typ, ok := referenceType(first)
	title := bytes.Contains(first, []byte(`"title"`)) && ok && typ == typeTitle
	return referenceSniff(first) || isObject(first) && (title || ok && knownEntry[typ])
}

func referenceClassify(head []byte) (Kind, bool) {
	lines := bytes.Split(head, []byte("\n"))
	sawHeader := false
	for _, l := range lines[:len(lines)-1] {
		l = bytes.TrimSpace(l)
		typ, ok := referenceType(l)
		switch {
		case len(l) == 0 || !ok:
		case typ == typeSession && referenceSniff(l):
			sawHeader = true
		case streamTypes[typ]:
			return KindStream, true
		case knownEntry[typ]:
			return KindSession, true
		}
	}
	if sawHeader {
		return KindSession, false
	}
	return KindUnknown, false
}

func FuzzFirstLineMatchesReference(f *testing.F) {
	for _, s := range []string{
		`{"type":"session","version":3,"id":"s","cwd":"/w"}` + "\r\n",
		`{"type":5,"type":"session","id":"s"}`, `{"type":"session","id":"s","x":tru}`,
		`{"type":"title","v":1,"title":"t"}`, `{"type":"titl\u0065"}`, `{"TYPE":"message","type":null}`,
		"\u00a0{\"type\":\"message\"}\n{\"type\":\"agent_start\"}\n", `{"type":"session","id":"s"}` + "\n" + `{"type":"turn_start"}` + "\n",
		`{"type":"session","id":"s","parentSession":7}` + "\n\n" + `[1]` + "\n" + `null` + "\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := Sniff(b), referenceSniff(b); got != want {
			t.Fatalf("Sniff(%q) = %v, want %v", b, got, want)
		}
		if got, want := Starts(b), referenceStarts(b); got != want {
			t.Fatalf("Starts(%q) = %v, want %v", b, got, want)
		}
		k, sure := ClassifyHead(b)
		if wk, wsure := referenceClassify(b); k != wk || sure != wsure {
			t.Fatalf("ClassifyHead(%q) = %v, %v; want %v, %v", b, k, sure, wk, wsure)
		}
	})
}

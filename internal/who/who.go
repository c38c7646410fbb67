// Package who names the person behind a run, for a team that groups its
// spend by user, with privacy by default: nothing unless asked. A name the
// user gives (--user) is enduser.id as given; asked for a pseudonym
// instead, pi-otel sends enduser.pseudo.id, a keyed hash of the OS user
// and the host, which the same person on the same machine always gets and
// which no one without the key can turn back into a login. An e-mail
// address is never looked up.
package who

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/user"

	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
)

// Pseudonym is the keyed hash of an OS user on a host: the first 16 bytes
// of HMAC-SHA256, in hex. The key keeps a list of likely logins and host
// names from being hashed and matched.
func Pseudonym(key, login, host string) string {
	m := hmac.New(sha256.New, []byte(key))
	m.Write([]byte(login))
	m.Write([]byte{0})
	m.Write([]byte(host))
	return hex.EncodeToString(m.Sum(nil)[:16])
}

// LocalPseudonym is the pseudonym of the user running pi-otel here, or ""
// when the system does not say who or where that is.
func LocalPseudonym(key string) string {
	u, err := user.Current()
	if err != nil || u.Username == "" {
		return ""
	}
	host, err := os.Hostname()
	if err != nil || host == "" {
		return ""
	}
	return Pseudonym(key, u.Username, host)
}

// PseudoAttribute is enduser.pseudo.id for key, when a pseudonym is
// asked for (key set) and no user was named; else none.
func PseudoAttribute(user, key string) []attribute.KeyValue {
	if user != "" || key == "" {
		return nil
	}
	if p := LocalPseudonym(key); p != "" {
		return []attribute.KeyValue{semconv.EnduserPseudoID(p)}
	}
	return nil
}

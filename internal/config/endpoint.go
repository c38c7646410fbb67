package config

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"

	"github.com/pi-otel/pi-otel/internal/telemetry"
)

// resolveEndpoint turns a configured endpoint into an absolute URL whose
// scheme says whether the connection is plaintext.
func resolveEndpoint(raw string, generic bool, p telemetry.Protocol, signalPath string, insecure bool) (string, error) {
	defPort := "4317"
	if p == telemetry.ProtocolHTTPProtobuf {
		defPort = "4318"
	}
	if raw == "" {
		raw, generic = "http://localhost:"+defPort, true
	}
	var u *url.URL
	if strings.Contains(raw, "://") {
		var err error
		if u, err = url.Parse(raw); err != nil {
			return "", fmt.Errorf("%q is not an endpoint (not a URL); %s", redactURL(raw), endpointForm)
		}
		u.Scheme = strings.ToLower(u.Scheme)
		if u.Scheme != "http" && u.Scheme != "https" {
			return "", fmt.Errorf("%q is not an endpoint (the scheme must be http or https); %s", redactURL(raw), endpointForm)
		}
		if u.Host == "" {
			return "", fmt.Errorf("%q is not an endpoint (no host); %s", redactURL(raw), endpointForm)
		}
		if err := checkHostPort(u.Host, true); err != nil {
			return "", fmt.Errorf("%q is not an endpoint (%v); %s", redactURL(raw), err, endpointForm)
		}
	} else {
		host := raw
		if i := strings.IndexAny(host, "/?#"); i >= 0 {
			return "", fmt.Errorf("%q is not an endpoint (a path needs http:// or https://); %s", raw, endpointForm)
		}
		h, _, err := net.SplitHostPort(host)
		if err != nil {
			h = strings.Trim(host, "[]")
			host = net.JoinHostPort(h, defPort)
		}
		if err := checkHostPort(host, false); err != nil {
			return "", fmt.Errorf("%q is not an endpoint (%v); %s", raw, err, endpointForm)
		}
		scheme := "https"
		if insecure || isLoopback(h) {
			scheme = "http"
		}
		u = &url.URL{Scheme: scheme, Host: host}
	}
	if p == telemetry.ProtocolGRPC {
		// gRPC has no path; keep only what picks the connection.
		return (&url.URL{Scheme: u.Scheme, Host: u.Host}).String(), nil
	}
	switch {
	case generic:
		u.Path = strings.TrimSuffix(u.Path, "/") + signalPath
		u.RawPath = ""
	case u.Path == "":
		u.Path = "/"
	}
	return u.String(), nil
}

// endpointForm is what an endpoint should look like, for error messages.
const endpointForm = "want http://HOST:PORT, https://HOST:PORT or HOST:PORT, such as http://localhost:4317"

// checkHostPort refuses a host that no connection could ever reach, such
// as "not a url" or "::::", so the mistake is named at start-up instead of
// surfacing as a failed export after the flush timeout. The port may be
// missing only from a URL, where the scheme implies it.
func checkHostPort(hostport string, portOptional bool) error {
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		if !portOptional || strings.Count(hostport, ":") > 0 && !strings.HasSuffix(hostport, "]") {
			return errors.New("not HOST:PORT")
		}
		host = strings.Trim(hostport, "[]")
	} else if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return errors.New("the port must be a number from 1 to 65535")
	}
	if host == "" {
		return errors.New("no host")
	}
	if net.ParseIP(host) != nil {
		return nil
	}
	for _, label := range strings.Split(strings.TrimSuffix(host, "."), ".") {
		if label == "" || len(label) > 63 || strings.ContainsFunc(label, notHostChar) {
			return errors.New("not a host name or IP address")
		}
	}
	return nil
}

func notHostChar(c rune) bool {
	return !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_')
}

func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// redactURL hides a password in a URL's user info.
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.User == nil {
		return s
	}
	return u.Redacted()
}

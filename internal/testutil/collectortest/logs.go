package collectortest

import (
	"compress/gzip"
	"io"
	"net/http"

	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	"google.golang.org/protobuf/proto"
)

// LogsEndpoint is an OTLP/HTTP logs endpoint standing in for a gateway's log store: it decodes
// each export request (gzipped, as otlphttp sends by default, or not), hands it to keep with the
// path it was sent to, and answers as a store would. keep may be called concurrently.
func LogsEndpoint(keep func(path string, req *collogspb.ExportLogsServiceRequest)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body io.Reader = r.Body
		if r.Header.Get("Content-Encoding") == "gzip" {
			gz, err := gzip.NewReader(r.Body)
			if err != nil {
				http.Error(w, "bad gzip", http.StatusBadRequest)
				return
			}
			body = gz
		}
		raw, err := io.ReadAll(body)
		req := &collogspb.ExportLogsServiceRequest{}
		if err != nil || proto.Unmarshal(raw, req) != nil {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		keep(r.URL.Path, req)
		out, _ := proto.Marshal(&collogspb.ExportLogsServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(out)
	})
}

package spantree

import (
	"encoding/json"
	"fmt"
	"strconv"
)

// Text renders an attribute value decoded from JSON or protobuf the way
// the SDK's attribute.Value.String renders the same value, so trees from
// every source compare.
func Text(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case bool:
		return strconv.FormatBool(v)
	case int64:
		return strconv.FormatInt(v, 10)
	case float64:
		return strconv.FormatFloat(v, 'g', -1, 64)
	case nil:
		return ""
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// Texts renders decoded attribute values with Text.
func Texts(m map[string]any) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = Text(v)
	}
	return out
}

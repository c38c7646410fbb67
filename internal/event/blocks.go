package event

// ToolCalls lists the ids and names of the toolCall blocks of content, a
// message's content as the Decoder returned it (so valid JSON), as
// decoding it into []struct{ Type, ID, Name string } with encoding/json
// and keeping the blocks of type "toolCall" would. A session history
// holds every assistant message once, whole, and this runs on each of
// them. ok is false when content has a shape this does not read exactly
// as encoding/json (not an array, an element that is not an object, an
// escaped or case-folded key, a value that is not a string); the caller
// then decodes it with encoding/json.
func ToolCalls(content []byte) (ids, names []string, ok bool) {
	i := skipSpace(content, 0)
	if i >= len(content) || content[i] != '[' {
		return nil, nil, false
	}
	i = skipSpace(content, i+1)
	for content[i] != ']' {
		switch content[i] {
		case 'n': // null: a block with no fields
			i += len("null")
		case '{':
			var typ, id, name string
			it := iterObject(content, i)
			for {
				k, vs, ve, more := it.next()
				if !more {
					break
				}
				var dst *string
				switch {
				case string(k) == "type":
					dst = &typ
				case string(k) == "id":
					dst = &id
				case string(k) == "name":
					dst = &name
				case !plainKey(k) || foldsToAny(k, []string{"type", "id", "name"}):
					return nil, nil, false
				default:
					continue
				}
				if !decodeString(content[vs:ve], dst) {
					return nil, nil, false
				}
			}
			if typ == "toolCall" {
				ids, names = append(ids, id), append(names, name)
			}
			i = skipValue(content, i)
		default:
			return nil, nil, false
		}
		i = skipSpace(content, i)
		if content[i] == ',' {
			i = skipSpace(content, i+1)
		}
	}
	return ids, names, true
}

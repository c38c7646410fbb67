package toolctx

import "strconv"

// sampleBytes is how many bytes of a command its key hashes: every byte of
// a short command, evenly spaced ones of a long one, so that the hook's
// pure-bash hash costs the same for a one-liner and a heredoc of 100 KB.
const sampleBytes = 64

// Key names a bash command without its content: its length in bytes and a
// 32-bit FNV-1a hash of up to sampleBytes of its bytes, the first and last
// among them. The hook finds a call by the length alone when it is the
// only one of that length, and computes the hash from
// BASH_EXECUTION_STRING only when calls of one length run together: a
// pure-bash hash costs a few milliseconds. Two commands of one length that
// differ only between sampled bytes share a key; the hook then claims one
// of the entries (see Run), and identical commands are interchangeable.
func Key(command string) string {
	n := len(command)
	k := min(n, sampleBytes)
	h := uint32(2166136261)
	for i := range k {
		pos := 0
		if k > 1 {
			pos = i * (n - 1) / (k - 1)
		}
		h ^= uint32(command[pos])
		h *= 16777619
	}
	return strconv.Itoa(n) + "-" + hex8(h)
}

func hex8(h uint32) string {
	s := strconv.FormatUint(uint64(h), 16)
	for len(s) < 8 {
		s = "0" + s
	}
	return s
}

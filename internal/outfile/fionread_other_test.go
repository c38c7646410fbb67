//go:build unix && !linux

package outfile

// fionread asks how many bytes a pipe holds: _IOR('f', 127, int) on the
// BSDs and macOS.
const fionread = 0x4004667f

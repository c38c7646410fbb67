//go:build !unix

package toolctx

import (
	"context"
	"errors"
	"os"
)

// Stream is unix only: elsewhere nothing is published.
type Stream struct{}

func NewStream(*os.File) (*Stream, error) { return nil, errors.ErrUnsupported }

func (*Stream) Read([]byte) (int, error) { return 0, errors.ErrUnsupported }

func (*Stream) Sync(context.Context, Question) {}

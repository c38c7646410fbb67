package option

import "testing"

type conf struct {
	n    int
	tags []string
}

func withN(n int) Option[conf] { return Func[conf](func(c *conf) { c.n = n }) }

func withTag(t string) Option[conf] {
	return Func[conf](func(c *conf) { c.tags = append(c.tags, t) })
}

func TestApplyInOrderSkippingNil(t *testing.T) {
	defaults := conf{n: 1}
	got := Apply(defaults, []Option[conf]{withN(2), nil, withTag("a"), withN(3), withTag("b")})
	if got.n != 3 || len(got.tags) != 2 || got.tags[0] != "a" || got.tags[1] != "b" {
		t.Fatalf("Apply = %+v, want n=3 tags=[a b]", got)
	}
	if defaults.n != 1 || defaults.tags != nil {
		t.Fatalf("Apply changed the defaults: %+v", defaults)
	}
}

func TestApplyNoOptionsKeepsDefaults(t *testing.T) {
	if got := Apply(conf{n: 7}, nil); got.n != 7 {
		t.Fatalf("Apply(nil) = %+v, want n=7", got)
	}
}

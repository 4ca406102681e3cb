package schedules

import "testing"

// BenchmarkPlan times generating (with lowering and validation) and
// simulating each schedule at P=8, M=32, the largest size the tests sweep.
func BenchmarkPlan(b *testing.B) {
	for _, name := range Names {
		v := vs(name)[0]
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				s, err := Generate(name, 8, 32, v)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := Simulate(s, unit); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

package bench

import (
	"bytes"
	"encoding/json"
	"os"
	"testing"
)

// The table and the CSV of the weak-scaling rows in testdata, against
// goldens (go test ./bench -run Scaling -update rewrites them).
func TestScalingReportGoldens(t *testing.T) {
	b, err := os.ReadFile("testdata/scaling_weak.json")
	if err != nil {
		t.Fatal(err)
	}
	var rows []ScalingRow
	if err := json.Unmarshal(b, &rows); err != nil {
		t.Fatal(err)
	}
	rep := ScalingReport{Mode: Weak, Grow: "pp", Hosts: "4 simulated hosts (network namespaces on one machine)", Rows: rows}
	for _, g := range []struct {
		path  string
		write func(*bytes.Buffer) error
	}{
		{"testdata/scaling_weak.txt", func(b *bytes.Buffer) error { return rep.WriteText(b) }},
		{"testdata/scaling_weak.csv", func(b *bytes.Buffer) error { return rep.WriteCSV(b) }},
	} {
		var got bytes.Buffer
		if err := g.write(&got); err != nil {
			t.Fatal(err)
		}
		if *update {
			if err := os.WriteFile(g.path, got.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(g.path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.Bytes(), want) {
			t.Errorf("%s differs:\n%s\nwant:\n%s", g.path, got.Bytes(), want)
		}
	}
	var back ScalingReport
	var js bytes.Buffer
	if err := rep.WriteJSON(&js); err != nil || json.Unmarshal(js.Bytes(), &back) != nil || len(back.Rows) != len(rows) || back.Rows[3] != rows[3] {
		t.Errorf("the JSON does not read back: %v\n%s", err, js.Bytes())
	}
}

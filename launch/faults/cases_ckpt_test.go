package faults

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"github.com/pplaunch/pplaunch/models/checkpoint"
)

// saved is the run that prepares the checkpoints of the damage cases: steps
// 2, 4 and 6 of a 6-step run.
var saved = steps(6, "--checkpoint-every", "2")

// prepare runs the case's flags without --resume or --overwrite into the
// case's checkpoint root first (extra flags added), and requires success.
func prepare(extra ...string) func(t *testing.T, e *env) {
	return func(t *testing.T, e *env) {
		t.Helper()
		args := append(append(append([]string{}, base...), "--checkpoint-dir", e.ck), saved...)
		code, out := runPlain(t, filepath.Base(e.dir)+"-prepare", 2, append(args, extra...))
		if code != 0 {
			t.Fatalf("preparing the checkpoints: exit %d\n%s", code, out)
		}
	}
}

// then runs prepare and then damage.
func then(first func(*testing.T, *env), damage func(t *testing.T, e *env)) func(*testing.T, *env) {
	return func(t *testing.T, e *env) {
		first(t, e)
		damage(t, e)
	}
}

func shard(e *env, step, stage int) string {
	return filepath.Join(checkpoint.StepDir(e.ck, step), checkpoint.ShardFile(stage, 2))
}

func manifestOf(e *env, step int) string {
	return filepath.Join(checkpoint.StepDir(e.ck, step), checkpoint.ManifestName)
}

// flip inverts one byte in the middle of a file.
func flip(path func(*env) string) func(*testing.T, *env) {
	return func(t *testing.T, e *env) {
		b, err := os.ReadFile(path(e))
		if err != nil {
			t.Fatal(err)
		}
		b[len(b)/2] ^= 0xFF
		if err := os.WriteFile(path(e), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// truncate cuts a file to half its size.
func truncate(path func(*env) string) func(*testing.T, *env) {
	return func(t *testing.T, e *env) {
		fi, err := os.Stat(path(e))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Truncate(path(e), fi.Size()/2); err != nil {
			t.Fatal(err)
		}
	}
}

func remove(paths ...func(*env) string) func(*testing.T, *env) {
	return func(t *testing.T, e *env) {
		for _, p := range paths {
			if err := os.Remove(p(e)); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// killedSaveTemps leaves the temporary files a killed save of step 6 would
// (one shard's, one manifest's) and removes its manifest.
func killedSaveTemps(t *testing.T, e *env) {
	dir := checkpoint.StepDir(e.ck, 6)
	os.Remove(manifestOf(e, 6))
	for _, n := range []string{"." + checkpoint.ShardFile(1, 2) + ".tmp-123", "." + checkpoint.ManifestName + ".tmp-456"} {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("torn"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// underFile points the checkpoint root under a regular file.
func underFile(t *testing.T, e *env) {
	f := filepath.Join(e.dir, "file")
	if err := os.WriteFile(f, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	e.ck = filepath.Join(f, "ckpt")
}

// unwritable is a read-only checkpoint root; as root, who writes one anyway,
// a root under a regular file.
func unwritable(t *testing.T, e *env) {
	if os.Geteuid() == 0 {
		underFile(t, e)
		return
	}
	if err := os.Mkdir(e.ck, 0o555); err != nil {
		t.Fatal(err)
	}
}

func needRoot() string {
	if os.Geteuid() != 0 {
		return "mounting a small tmpfs as a full disk needs root"
	}
	return ""
}

// tmpfs mounts a tmpfs of size at the checkpoint root, filled when full.
func tmpfs(size string, full bool) func(*testing.T, *env) {
	return func(t *testing.T, e *env) {
		if err := os.Mkdir(e.ck, 0o755); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", e.ck).CombinedOutput(); err != nil {
			t.Skipf("cannot mount a tmpfs here (%v: %s): the full-disk case needs it", err, out)
		}
		t.Cleanup(func() { exec.Command("umount", e.ck).Run() })
		if full {
			f, err := os.Create(filepath.Join(e.ck, "filler"))
			if err != nil {
				t.Fatal(err)
			}
			for err == nil {
				_, err = f.Write(make([]byte, 4096))
			}
			f.Close()
		}
	}
}

// noCheckpointAfterDivergence: the output names the diverged step, and no
// checkpoint of a later one exists.
func noCheckpointAfterDivergence(t *testing.T, e *env, out string) {
	m := regexp.MustCompile(`step (\d+): loss \S+, gradient norm \S+: training diverged`).FindStringSubmatch(out)
	if m == nil {
		t.Errorf("no divergence message naming the step")
		return
	}
	step, _ := strconv.Atoi(m[1])
	got, err := checkpoint.Complete(e.ck)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range got {
		if s > step {
			t.Errorf("checkpoint of step %d, after the diverged step %d", s, step)
		}
	}
}

var checkpointCases = []fcase{
	{name: "resume/corrupt-shard", fast: true, ckpt: true, args: with(saved, "--resume"),
		setup: then(prepare(), flip(func(e *env) string { return shard(e, 6, 1) })),
		code:  1, want: []string{`SHA-256 \S+ does not match the manifest's \S+ \(corrupt\)`, `stage-001-of-002\.safetensors`}, damaged: []int{6}, keep: []int{2, 4}},
	{name: "resume/truncated-shard", ckpt: true, args: with(saved, "--resume"),
		setup: then(prepare(), truncate(func(e *env) string { return shard(e, 6, 0) })),
		code:  1, want: []string{`stage-000-of-002\.safetensors: \d+ bytes, the manifest says \d+ \(truncated or replaced\)`}, damaged: []int{6}, keep: []int{2, 4}},
	{name: "resume/corrupt-manifest", ckpt: true, args: with(saved, "--resume"),
		setup: then(prepare(), flip(func(e *env) string { return manifestOf(e, 6) })),
		code:  1, want: []string{rootCause(0, `failed: resume: the newest complete checkpoint \S+/step-000006 is damaged: .*; move it out of \S+ \(or delete it\) to resume from step-000004, the one before it`)},
		notWant: []string{`\[rank 1\] .*damaged`}, damaged: []int{6}, keep: []int{2, 4}},
	{name: "resume/truncated-manifest", ckpt: true, args: with(saved, "--resume"),
		setup: then(prepare(), truncate(func(e *env) string { return manifestOf(e, 6) })),
		code:  1, want: []string{rootCause(0, `failed: resume: the newest complete checkpoint \S+/step-000006 is damaged: .*step-000006/manifest\.json`)}, damaged: []int{6}, keep: []int{2, 4}},
	{name: "resume/torn-save-uses-previous", ckpt: true, args: with(saved, "--resume"),
		setup: then(prepare(), remove(func(e *env) string { return manifestOf(e, 6) }, func(e *env) string { return manifestOf(e, 4) })),
		code:  0, want: []string{`resumed from \S*step-000002`}, keep: []int{2, 4, 6}, same: true},
	{name: "resume/killed-save-temps-cleaned", fast: true, ckpt: true, args: with(saved, "--resume"),
		setup: then(prepare(), killedSaveTemps),
		code:  0, want: []string{`removed 2 temporary files of killed checkpoint saves`, `resumed from \S*step-000004`}, keep: []int{2, 4, 6}, same: true,
		check: func(t *testing.T, e *env, _ string) { noTemps(t, e.ck) }},
	{name: "ckptdir/new-run-into-old-refused", fast: true, ckpt: true, args: saved, setup: prepare("--seed", "9"),
		code: 2, want: []string{`--checkpoint-dir \S+ holds 3 checkpoints of another run \(the newest step-000006\): continue that run with --resume, choose another directory, or pass --overwrite`},
		notWant: []string{`\[rank 0\]`}, keep: []int{2, 4, 6}},
	{name: "ckptdir/overwrite", ckpt: true, args: with(saved, "--overwrite"), setup: prepare("--seed", "9"),
		code: 0, want: []string{`--overwrite: removed the 3 checkpoints`}, keep: []int{2, 4, 6}, same: true},
	// A restart of an --overwrite run resumes it: it clears nothing again.
	{name: "ckptdir/overwrite-then-restart", ckpt: true, restarts: 1, args: with(saved, "--overwrite"), setup: prepare("--seed", "9"),
		env: kill(1, 3), marker: "SIGKILL before step 3",
		code: 0, want: []string{`--overwrite: removed the 3 checkpoints`, `resumed from \S*step-000002`}, keep: []int{2, 4, 6}, same: true},
	{name: "ckptdir/resume-and-overwrite", ckpt: true, args: with(saved, "--overwrite", "--resume"),
		code: 2, want: []string{`--resume continues the run in --checkpoint-dir, --overwrite removes it: give one`}},
	{name: "ckptdir/under-a-file", fast: true, ckpt: true, args: steps(2), setup: underFile,
		code: 2, want: []string{`--checkpoint-dir \S+/file/ckpt cannot hold checkpoints: mkdir \S+: not a directory`}, notWant: []string{`\[rank 0\]`}},
	{name: "ckptdir/unwritable", ckpt: true, args: steps(2), setup: unwritable,
		code: 2, want: []string{`--checkpoint-dir \S+ cannot hold checkpoints`}, notWant: []string{`\[rank 0\]`}},
	{name: "ckptdir/disk-full-before-start", ckpt: true, args: steps(2), setup: tmpfs("64k", true), skip: needRoot,
		code: 2, want: []string{`--checkpoint-dir \S+ cannot hold checkpoints: .*no space left on device`}, notWant: []string{`\[rank 0\]`}},
	{name: "ckptdir/disk-full-at-save", ckpt: true, args: steps(3, "--checkpoint-every", "1"), setup: tmpfs("64k", false), skip: needRoot,
		code: 1, want: []string{`checkpoint step 1: .*no space left on device`}, notWant: []string{`step 2/3`},
		check: func(t *testing.T, e *env, _ string) { noTemps(t, e.ck) }},
	{name: "diverge/nan-loss", fast: true, ckpt: true,
		args: steps(8, "--checkpoint-every", "1", "--lr", "1e38", "--min-lr", "0", "--warmup", "0", "--clip", "0", "--optimizer", "sgd"),
		code: 1, want: []string{rootCause(anyRank, "failed: "), `step \d+: loss NaN, gradient norm NaN: training diverged`},
		check: noCheckpointAfterDivergence},
	{name: "diverge/overflowed-weights-not-saved", ckpt: true,
		args: steps(8, "--checkpoint-every", "1", "--lr", "1e300", "--min-lr", "0", "--warmup", "0", "--clip", "0", "--optimizer", "sgd"),
		code: 1, want: []string{`checkpoint step 1: stage \d: \S+ is [+-]Inf: not saving non-finite weights`},
		check: func(t *testing.T, e *env, _ string) {
			if got, _ := checkpoint.Complete(e.ck); len(got) != 0 {
				t.Errorf("checkpoints %v of overflowed weights", got)
			}
		}},
	{name: "diverge/adamw", ckpt: true,
		args: steps(8, "--checkpoint-every", "1", "--lr", "1e30", "--min-lr", "0", "--warmup", "0", "--clip", "0"),
		code: 1, want: []string{`training diverged|not saving non-finite weights`}},
}

// with is a copy of a with more appended (never a's array).
func with(a []string, more ...string) []string {
	return append(append([]string{}, a...), more...)
}

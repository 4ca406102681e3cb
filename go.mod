module github.com/pplaunch/pplaunch

go 1.26.0

require (
	github.com/alexflint/go-arg v1.6.1
	github.com/prometheus/procfs v0.23.0
	golang.org/x/sys v0.49.0
	gonum.org/v1/gonum v0.17.0
)

require github.com/alexflint/go-scalar v1.2.0 // indirect

// Package gpu holds bench/gpu/check.sh, the one call that runs every check
// of pplaunch needing a GPU, with the Python scripts it compares against
// PyTorch; its Go code is only tests: of lib.sh, the script's verdicts,
// budget and summary, and (make gpu-dry) of the whole script over the CPU
// emulator.
package gpu

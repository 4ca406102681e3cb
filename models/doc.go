// Package models holds the layers (with explicit forward and backward, split into
// input and weight parts), the GPT-2 and MLP models, and the Stage: a contiguous
// slice of a model that a pipeline executor drives micro-batch by micro-batch.
//
// The numbers never depend on how the model is run. Initialisation is a function
// of (seed, parameter name); a stage's weight gradient for each micro-batch goes
// into a buffer of its own and an Accumulator adds the buffers along a pairwise
// tree over global micro-batch indices; tied embeddings keep two gradients that
// are added in a fixed order; the global gradient norm is combined in name order.
// So a model cut into any number of stages, with or without recomputation, full
// or split backward, gives the uncut model's losses and gradients bit for bit.
//
// Values are reached only through the stage's tensor.Backend (allocation,
// explicit host copies, the optimizers' updates, Σg²), so a stage computes on
// the CPU or on a GPU alike, and on either backend a cut model gives the bits of
// the uncut one.
//
// Also here: optimizers (AdamW, SGD with momentum, warmup and cosine schedule,
// clipping by a norm supplied from outside), partitioning (uniform, by
// parameters, by FLOPs, explicit), and the bridge to checkpoints and
// --init-from. The data and the checkpoint format live in the subpackages data,
// checkpoint and safetensors.
//
// It imports its subpackages only (tensor, checkpoint, safetensors, data); it
// must never import collective, ranks, schedules, launch or bench: a stage
// computes, and the executor above it decides what runs when.
package models

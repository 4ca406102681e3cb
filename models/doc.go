// Package models holds the layers (with explicit forward and backward), the GPT and
// MLP models cut into pipeline stages, optimizers, data and checkpoints.
package models

package main

// optimFlags are train's optimizer hyper-parameters and learning-rate shape
// beyond --lr, --min-lr and --warmup (what DeepSpeed's optimizer and
// scheduler blocks in --config set).
type optimFlags struct {
	LRSchedule    string  `arg:"--lr-schedule" default:"cosine" help:"after warmup: cosine or linear decay to --min-lr, or constant" ds:"scheduler.type" alias:"lr_decay_style,lr_scheduler_type" same:"true"`
	WarmupStartLR float64 `arg:"--warmup-start-lr" help:"learning rate the linear warmup starts from" same:"true"`
	LRDecaySteps  int     `arg:"--lr-decay-steps" placeholder:"N" help:"step the decay reaches --min-lr [default: --steps]" ds:"scheduler.params.total_num_steps" alias:"lr_decay_iters" same:"true"`
	AdamBeta1     float64 `arg:"--adam-beta1" default:"0.9" help:"AdamW's beta1" ds:"optimizer.params.betas" same:"true"`
	AdamBeta2     float64 `arg:"--adam-beta2" default:"0.95" help:"AdamW's beta2" ds:"optimizer.params.betas" same:"true"`
	AdamEps       float64 `arg:"--adam-eps" default:"1e-8" help:"AdamW's eps" ds:"optimizer.params.eps" alias:"adam_epsilon" same:"true"`
	Momentum      float64 `arg:"--momentum" default:"0.9" help:"SGD's momentum" ds:"optimizer.params.momentum" same:"true"`
	Zero          int     `arg:"--zero" placeholder:"STAGE" help:"ZeRO stage: 1 shards the optimizer state over the data-parallel replicas (each keeps and updates 1/dp of it), 0 off; pipelines allow no other (DeepSpeed's zero_optimization.stage)" ds:"zero_optimization.stage" same:"true"`
}

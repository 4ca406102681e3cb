package main

// optimFlags are train's optimizer hyper-parameters and learning-rate shape
// beyond --lr, --min-lr and --warmup (what DeepSpeed's optimizer and
// scheduler blocks in --config set).
type optimFlags struct {
	LRSchedule    string  `arg:"--lr-schedule" default:"cosine" help:"after warmup: cosine or linear decay to --min-lr, or constant"`
	WarmupStartLR float64 `arg:"--warmup-start-lr" help:"learning rate the linear warmup starts from"`
	LRDecaySteps  int     `arg:"--lr-decay-steps" placeholder:"N" help:"step the decay reaches --min-lr [default: --steps]"`
	AdamBeta1     float64 `arg:"--adam-beta1" default:"0.9" help:"AdamW's beta1"`
	AdamBeta2     float64 `arg:"--adam-beta2" default:"0.95" help:"AdamW's beta2"`
	AdamEps       float64 `arg:"--adam-eps" default:"1e-8" help:"AdamW's eps"`
	Momentum      float64 `arg:"--momentum" default:"0.9" help:"SGD's momentum"`
	Zero          int     `arg:"--zero" placeholder:"STAGE" help:"ZeRO stage: 1 shards the optimizer state over the data-parallel replicas (each keeps and updates 1/dp of it), 0 off; pipelines allow no other (DeepSpeed's zero_optimization.stage)"`
}

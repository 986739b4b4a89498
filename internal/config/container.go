package config

// Container configures sbuild and srun-wrap. Its keys are filled in by the
// sbuild work.
type Container struct{}

func defaultContainer() Container { return Container{} }

func (c *Container) validate() error { return nil }

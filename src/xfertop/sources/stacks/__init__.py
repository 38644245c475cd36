"""py-spy stacks of a training process (`xfertop attach`): the sampler, its output, the source lines it
names, and where the process's threads ran while it sampled."""

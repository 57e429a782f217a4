"""torchft's Optimizer wrapper: zero_grad starts the step's quorum, step
applies the update only if the step commits (every rank of every
participating replica group voted yes)."""
import torch


class OptimizerWrapper(torch.optim.Optimizer):
    def __init__(self, manager, optim):  # no super().__init__: a wrapper
        self.optim = optim
        self.manager = manager

    def add_param_group(self, param_group):
        self.optim.add_param_group(param_group)

    def load_state_dict(self, state_dict):
        self.optim.load_state_dict(state_dict)

    def state_dict(self):
        return self.optim.state_dict()

    def zero_grad(self, set_to_none=True):
        self.manager.start_quorum()
        self.optim.zero_grad(set_to_none)

    def step(self, closure=None):
        if closure is not None:
            raise ValueError("optimizers that use closures are not supported")
        if self.manager.should_commit():
            self.optim.step()

    @property
    def param_groups(self):
        return self.optim.param_groups

    @property
    def state(self):
        return self.optim.state

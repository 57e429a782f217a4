"""torchft's LocalSGD and (streaming) DiLoCo on ftc's Manager.

LocalSGD: each replica group trains alone and every sync_every optimizer
steps the parameters are averaged across the groups; a sync that does not
commit leaves them as they were.

DiLoCo: the model is split into fragments (one, or several for streaming
DiLoCo); every sync_every inner steps each fragment's pseudo-gradient
(its global parameters minus the local ones) is averaged across the
groups and the outer optimizer applies it to the global parameters, which
become the local ones again (mixed with the local ones by
fragment_update_alpha). Fragments sync in turn, sync_every / n steps
apart, the quorum's step naming the fragment (step mod n); with fragment_sync_delay d a fragment's allreduce starts d steps
before it is applied, overlapping training. A sync that does not commit
puts the fragment back to its global parameters. The global parameters
and the outer optimizer's state of each fragment are registered with the
Manager, so a replica group that restarts heals them with the model."""
import torch


def _params(module):
    return [p for p in module.parameters()]


class _OnEachStep:
    """A context manager that calls self._step_post_hook() after each
    step of self._optimizer."""

    _hook = None

    def __enter__(self):
        self._hook = self._optimizer.register_step_post_hook(
            lambda *_: self._step_post_hook())
        return self

    def __exit__(self, *exc):
        if self._hook is not None:
            self._hook.remove()
            self._hook = None
        return False


class LocalSGD(_OnEachStep):
    def __init__(self, manager, model, optimizer, sync_every):
        if sync_every < 1:
            raise ValueError("sync_every must be >= 1")
        self._manager = manager
        self._model = model
        self._optimizer = optimizer
        self._sync_every = sync_every
        self._local_step = 0

    def _step_post_hook(self):
        self._local_step += 1
        if self._local_step >= self._sync_every:
            self.sync()

    def sync(self):
        """Averages the parameters across the replica groups now."""
        self._local_step = 0
        self._manager.start_quorum()
        params = _params(self._model)
        averaged = [p.detach().clone() for p in params]
        works = [self._manager.allreduce(a) for a in averaged]
        for w in works:
            w.wait()
        if self._manager.should_commit():
            with torch.no_grad():
                for p, a in zip(params, averaged):
                    p.copy_(a)


class _Fragment:
    """One fragment's global parameters and outer optimizer."""

    def __init__(self, manager, index, module, outer_optimizer, alpha,
                 backup_device, pin_memory):
        self.manager = manager
        self.params = _params(module)
        self.outer = outer_optimizer
        self.alpha = alpha
        device = torch.device(backup_device) if backup_device else None

        def backup(p):
            b = p.detach().to(device or p.device, copy=True)
            return b.pin_memory() if pin_memory and b.device.type == "cpu" \
                and torch.cuda.is_available() else b
        self.original = [backup(p) for p in self.params]
        self.pseudo = None
        self.works = []
        manager.register_state_dict_fn(
            f"StreamingDiLoCoFragment_{index}", self._load, self._save)

    def _save(self):
        return {"original_parameters": list(self.original),
                "outer_optim": self.outer.state_dict()}

    def _load(self, state):
        with torch.no_grad():
            for o, t in zip(self.original, state["original_parameters"]):
                o.copy_(t)
        self.outer.load_state_dict(state["outer_optim"])

    def prepare(self):
        """Starts the pseudo-gradients' allreduce."""
        with torch.no_grad():
            self.pseudo = [o.to(p.device) - p.detach()
                           for o, p in zip(self.original, self.params)]
        self.works = [self.manager.allreduce(g) for g in self.pseudo]

    def perform(self):
        """Waits for the allreduce, votes, applies the outer step (or puts
        the fragment back); returns whether it committed."""
        for w in self.works:
            w.wait()
        committed = self.manager.should_commit()
        with torch.no_grad():
            local = [p.detach().clone() for p in self.params] \
                if committed and self.alpha > 0 else None
            for p, o in zip(self.params, self.original):
                p.copy_(o)
        if committed:
            self._outer_step()
            with torch.no_grad():
                for o, p in zip(self.original, self.params):
                    o.copy_(p)
                if local is not None:
                    for p, x in zip(self.params, local):
                        p.lerp_(x, self.alpha)
        self.pseudo, self.works = None, []
        return committed


    def _outer_step(self):
        """The outer optimizer's step on this fragment alone: it may hold
        the whole model (torchft's example passes one for every
        fragment), so the other parameters' gradients are hidden."""
        mine = {id(p) for p in self.params}
        others = [p for group in self.outer.param_groups
                  for p in group["params"] if id(p) not in mine]
        hidden = [p.grad for p in others]
        for p in others:
            p.grad = None
        for p, g in zip(self.params, self.pseudo):
            p.grad = g
        try:
            self.outer.step()
        finally:
            for p in self.params:
                p.grad = None
            for p, g in zip(others, hidden):
                p.grad = g


class DiLoCo(_OnEachStep):
    def __init__(self, manager, model_fragments, inner_optimizer,
                 outer_optimizer, sync_every, backup_device=None,
                 pin_memory=True, use_bucketization=False, bucket_cap_mb=None,
                 should_quantize=False, fragment_sync_delay=0,
                 fragment_update_alpha=0.0):
        if getattr(manager, "_use_async_quorum", False):
            raise ValueError("DiLoCo needs Manager(use_async_quorum=False): "
                             "a fragment's quorum must be known before its "
                             "sync")
        n = len(model_fragments)
        if n < 1:
            raise ValueError("model_fragments: at least one")
        if sync_every < n or sync_every % n != 0:
            raise ValueError("sync_every must be a multiple of the number "
                             "of fragments")
        self._every = sync_every // n
        if not 0 <= fragment_sync_delay < self._every:
            raise ValueError("fragment_sync_delay must be less than "
                             "sync_every / fragments")
        if not 0.0 <= fragment_update_alpha <= 1.0:
            raise ValueError("fragment_update_alpha must be in [0, 1]")
        outers = outer_optimizer if isinstance(outer_optimizer, list) \
            else [outer_optimizer] * n
        if len(outers) != n:
            raise ValueError("one outer optimizer, or one per fragment")
        self._manager = manager
        self._optimizer = inner_optimizer
        self._delay = fragment_sync_delay
        self._fragments = [
            _Fragment(manager, i, m, outers[i], fragment_update_alpha,
                      backup_device, pin_memory)
            for i, m in enumerate(model_fragments)]
        self._local_step = 0
        self._pending = None  # the fragment prepared, until it syncs

    def _step_post_hook(self):
        self._local_step += 1
        if self._local_step == self._every - self._delay:
            # The quorum's step names the fragment, the same on every
            # replica (a restarted one too: it heals the step), so all
            # send the same fragment's allreduces in the same order.
            self._manager.start_quorum()
            step = self._manager.current_step()
            self._pending = self._fragments[step % len(self._fragments)]
            self._pending.prepare()
        if self._local_step == self._every:
            self._pending.perform()
            self._pending = None
            self._local_step = 0

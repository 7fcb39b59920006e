"""Loaded by every Python process sglang_driver.py starts (its folder is on PYTHONPATH). Glue only:

- Where SGLANG_STEP_LOG names a file, SGLang's scheduler rounds are timed without being changed: once
  sglang.srt.managers.tp_worker is imported, TpModelWorker._forward_batch_generation_dllm (one round:
  a block's steps in sync mode, one step first done first out) and ModelRunner.forward (one model
  forward) are wrapped. A round's row (SGLANG_STEP_LOG.PID): its wall-clock start (s), its time from a
  CUDA synchronize before it to its return (ms; the algorithm reads its results back to the host, so
  it ends synchronized), its requests, its query tokens, its forwards, whether the first ran as a
  CUDA graph and its requests' sequence lengths summed (cached tokens and the block: what the round's
  attention reads; -1 where the batch does not say). The gap between one round's end and the next one's start is the scheduler's host work.
- The dummy load format draws weights uniform within 1e-3, which lets the router's expert bias
  outweigh each token's own scores, so tokens crowd onto the experts the bias favours. The draw is
  replaced by the seeds' drivers' (normal, std 0.02; norms 1; biases 0), which spreads tokens over the
  experts as a trained router does.
- sglang 0.5.17 registers its own config classes with transformers, and one of them (qwen3_asr) is a
  transformers class since the release it pinned: AutoConfig.register is made to register over it
  (exist_ok) rather than stop the import.
- Where SGLANG_STAND_INS names packages (comma-separated), each one missing here becomes an import-only
  stand-in (its classes accept any value as a pydantic field; calling one raises): files the engine
  loads import IPython and xgrammar at their top though no request here asks for a grammar.
"""
import importlib.abc, importlib.util, os, sys, time

LOG = os.environ.get("SGLANG_STEP_LOG")
_forwards = [0]


def _patch_runner(mod):
    orig = mod.ModelRunner.forward

    def forward(self, *a, **k):
        _forwards[0] += 1
        return orig(self, *a, **k)
    mod.ModelRunner.forward = forward


def _patch_worker(mod):
    import torch
    orig = mod.TpModelWorker._forward_batch_generation_dllm
    out = open(f"{LOG}.{os.getpid()}", "w", buffering=1)
    out.write("start_s,ms,reqs,q_tokens,forwards,graph,kv_tokens\n")

    def run(self, forward_batch, batch=None):
        torch.cuda.synchronize()
        _forwards[0] = 0
        t0, w0 = time.perf_counter(), time.time()
        res = orig(self, forward_batch, batch)
        ms = (time.perf_counter() - t0) * 1e3
        out.write(f"{w0:.6f},{ms:.3f},{forward_batch.batch_size},{forward_batch.input_ids.numel()},"
                  f"{_forwards[0]},{int(bool(res.can_run_cuda_graph))},{getattr(forward_batch, 'seq_lens_sum', None) or -1}\n")
        return res
    mod.TpModelWorker._forward_batch_generation_dllm = run


def _patch_dummy_weights(mod):
    import torch

    def init(model, *_, **__):
        g = torch.Generator(device="cuda").manual_seed(0)
        with torch.no_grad():
            for name, p in model.named_parameters():
                if "bias" in name:
                    p.zero_()
                elif p.dim() == 1:
                    p.fill_(1.0)
                elif p.is_floating_point():
                    p.normal_(0.0, 0.02, generator=g)
    mod.initialize_dummy_weights = init


def _patch_loader(mod):
    _patch_dummy_weights(mod)


def _patch_auto_config(mod):
    orig = mod.AutoConfig.register

    def register(model_type, config, exist_ok=False):
        return orig(model_type, config, exist_ok=True)
    mod.AutoConfig.register = staticmethod(register)


class _After(importlib.abc.MetaPathFinder):
    hooks = {"transformers.models.auto.configuration_auto": _patch_auto_config,
             "sglang.srt.model_loader.loader": _patch_loader}
    if LOG:
        hooks.update({"sglang.srt.managers.tp_worker": _patch_worker,
                      "sglang.srt.model_executor.model_runner": _patch_runner})

    def find_spec(self, name, path, target=None):
        if name not in self.hooks:
            return None
        sys.meta_path.remove(self)
        try:
            spec = importlib.util.find_spec(name)
        finally:
            sys.meta_path.insert(0, self)
        if spec is None:
            return None
        load, hook = spec.loader.exec_module, self.hooks[name]

        def exec_module(module):
            load(module)
            hook(module)
        spec.loader.exec_module = exec_module
        return spec


class _StandIn(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    names = {n for n in os.environ.get("SGLANG_STAND_INS", "").split(",") if n}

    def find_spec(self, name, path, target=None):
        if name.split(".")[0] not in self.names:
            return None
        return importlib.util.spec_from_loader(name, self, is_package=True)

    def create_module(self, spec):
        import types

        class Module(types.ModuleType):
            def __getattr__(self, attr):
                if attr.startswith("__"):
                    raise AttributeError(attr)
                return type(attr, (), {"__init__": _refuse, "__module__": self.__name__,
                                       "__get_pydantic_core_schema__": classmethod(_any_schema)})
        m = Module(spec.name)
        m.__path__ = []
        return m

    def exec_module(self, module):
        print(f"stand-in: {module.__name__}", file=sys.stderr)


def _any_schema(cls, source, handler):
    """A stand-in class as a field of a pydantic model (sglang's OpenAI protocol) accepts anything."""
    from pydantic_core import core_schema
    return core_schema.any_schema()


def _refuse(*_, **__):
    raise RuntimeError("an import-only stand-in was used (sglang_hook/sitecustomize.py)")


def _chain():
    """Runs the sitecustomize this one shadows, if the interpreter has one."""
    here = os.path.dirname(os.path.abspath(__file__))
    for d in sys.path:
        f = os.path.join(d, "sitecustomize.py")
        if d and os.path.abspath(d) != here and os.path.exists(f):
            spec = importlib.util.spec_from_file_location("_shadowed_sitecustomize", f)
            spec.loader.exec_module(importlib.util.module_from_spec(spec))
            return


if __name__ == "sitecustomize":
    _chain()
sys.meta_path.insert(0, _After())
if _StandIn.names:
    sys.meta_path.append(_StandIn())

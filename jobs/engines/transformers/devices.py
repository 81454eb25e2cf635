"""Where the transformers engine puts a model: on its one device, or, where its actor holds several GPUs (a model
file's `tensor_parallel_size` for this engine is the devices its weights are split over), its layers balanced
across them by accelerate, each decoder layer whole, the activations handed from one device to the next by
accelerate's hooks. Layers in turn, not tensor parallelism: the weights fit, one device computes at a time."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from torch import nn


def visible_devices() -> tuple[str, ...]:
    """The devices this process may use: each GPU Ray gave its actor (CUDA_VISIBLE_DEVICES), else the CPU."""
    import torch

    count = torch.cuda.device_count()
    return tuple(f"cuda:{i}" for i in range(count)) if count else ("cpu",)


def no_split_classes(module: nn.Module) -> list[str]:
    """The module classes a device map must keep whole (a decoder layer's residual stream stays on one device):
    transformers names them on each model class (`_no_split_modules`)."""
    found = {name for sub in module.modules() for name in (getattr(sub, "_no_split_modules", None) or [])}
    return sorted(found)


def split_map(module: nn.Module, devices: Sequence[str], memory: Mapping[int, int] | None = None
              ) -> dict[str, str]:
    """Each submodule's device, the layers balanced over `devices` as accelerate balances them; `memory`: bytes
    each device may hold (default: what each GPU has free)."""
    import torch
    from accelerate import infer_auto_device_map
    from accelerate.utils import get_balanced_memory

    if memory is None:
        memory = {k: torch.cuda.mem_get_info(k)[0] for k in range(len(devices))}
    keep_whole = no_split_classes(module)
    balanced = get_balanced_memory(module, max_memory=dict(memory), no_split_module_classes=keep_whole)
    placed = infer_auto_device_map(module, max_memory=balanced, no_split_module_classes=keep_whole)
    unplaced = sorted(name for name, where in placed.items() if not isinstance(where, int))
    if unplaced:  # accelerate offloads what does not fit: a silent slowdown of 100x, never what was asked for
        raise ValueError(f"the model does not fit on {len(devices)} devices ({', '.join(unplaced[:3])} would be "
                         "offloaded to the CPU or disk); give its model file a larger tensor_parallel_size")
    return {name: devices[where] for name, where in placed.items()}


def placed(module: nn.Module, devices: Sequence[str], memory: Mapping[int, int] | None = None) -> nn.Module:
    """The module on its one device, or dispatched over several (split_map), in eval mode."""
    if len(devices) == 1:
        return module.to(devices[0]).eval()
    from accelerate import dispatch_model

    return dispatch_model(module, device_map=split_map(module, devices, memory)).eval()

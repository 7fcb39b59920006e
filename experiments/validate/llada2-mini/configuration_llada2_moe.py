"""The configuration class a LLaDA2.0 checkpoint names in its auto_map, for an offline machine: every
field of config.json becomes an attribute (sglang's llada2.py reads them by name)."""
from transformers import PretrainedConfig


class LLaDA2MoeConfig(PretrainedConfig):
    model_type = "llada2_moe"

    def __init__(self, **kwargs):
        super().__init__(**kwargs)

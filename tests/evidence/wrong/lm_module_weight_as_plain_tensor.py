"""Each block's attn.q_proj.weight is a plain tensor attribute, not a registered parameter:
the forward pass is right, but the optimizer and state_dict never see that weight."""

from tests.adapters import *  # noqa: F403  (every other component stays correct)
from tests.evidence.wrong._module_mistakes import MistakenModules, query_weight_plain_tensor

CAUGHT_BY = frozenset({"transformer_lm_module", "transformer_block_module"})
_modules = MistakenModules(query_weight_plain_tensor)
get_transformer_lm = _modules.get_transformer_lm
get_transformer_block = _modules.get_transformer_block

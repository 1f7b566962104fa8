"""gpudash: triage and bootstrap GPU machines for LLM inference, over SSH, in a terminal."""

import warnings

__version__ = "0.1.0"

# The deprecated `pynvml` distribution, when installed beside nvidia-ml-py, warns on import;
# the module we want is the same either way, so the warning is only noise for users.
warnings.filterwarnings("ignore", category=FutureWarning, module="pynvml")
warnings.filterwarnings("ignore", message=".*pynvml.*deprecated.*", category=FutureWarning)

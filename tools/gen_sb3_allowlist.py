"""Regenerate rules/allow-sb3.yaml: the names stable-baselines3's saves import.

stable-baselines3 is not a test dependency (tests/data/sb3 keeps real files it wrote), so run this where it is
installed beside the test extra (`pip install stable-baselines3 gymnasium`, never another torch), then
`python tools/gen_sb3_allowlist.py [--keep DIR]`. Empirical, as the other
recorded lists: each algorithm of the catalogue below learns a few steps and is saved the ways stable-baselines3
documents (`model.save()`, a zip whose `data` JSON holds base64 cloudpickles the loader unpickles, which wscan scans;
`save_replay_buffer()` and `VecNormalize.save()`, plain pickles); the names those pickles import are recorded by a
find_class that refuses nothing, and classes are screened as scikit-learn's ecosystem is. The policy classes, spaces
and schedules are kept as values (the loader builds the policy from its class): their constructors build networks
or store numbers. A learning rate given as a lambda is code in the file (cloudpickle saves the function by value),
which stays critical whatever this list says.
"""

from __future__ import annotations

import base64
import io
import json
import pickle
import shutil
import tempfile
import zipfile
from pathlib import Path

from gen_allowlists import _resolve, callable_instances, catalogue_arguments, screened_names
from gen_stats_allowlist import _callable_attributes, methods
from pack_file import record_imports, write_pack

LIBRARIES = ("stable_baselines3.", "gymnasium.spaces.")
# What `policy.save()` (a torch.save of the policy's constructor arguments) keeps as its schedule: a static method
# that returns 0.0, looked up on the class (a value; nothing calls it while the file loads).
REFERENCED = ["stable_baselines3.common.policies.BasePolicy._dummy_schedule",
              "stable_baselines3.common.policies.BasePolicy"]
# ... and its features extractor class (torch modules that flatten or encode observations), kept as a value the loader
# builds the policy with.
EXTRACTORS = [f"stable_baselines3.common.torch_layers.{name}"
              for name in ("FlattenExtractor", "NatureCNN", "CombinedExtractor", "MlpExtractor")]
SB3_CLASS_HOOKS = {
    "stable_baselines3.common.type_aliases.TrainFreq": "NamedTuple",
    "stable_baselines3.common.type_aliases.TrainFrequencyUnit": "Enum",
}
SB3_OWNER_HOOKS = {
    # gymnasium's spaces compare their bounds and shapes; Box's and Space's __setstate__ fill in fields older versions
    # lacked, then update __dict__
    "__eq__ of gymnasium.spaces.box.Box": "compares bounds and shape",
    "__eq__ of gymnasium.spaces.discrete.Discrete": "compares n and start",
    "__setstate__ of gymnasium.spaces.box.Box": "defaults, then __dict__",
    "__setstate__ of gymnasium.spaces.discrete.Discrete": "defaults, then __dict__",
    "__setstate__ of gymnasium.spaces.space.Space": "defaults, then __dict__",
    # VecNormalize's __setstate__ updates __dict__ and drops the env (set again with set_venv); its __getattr__
    # (VecEnvWrapper's) reads from the wrapped env, which a loaded one does not have
    "__setstate__ of stable_baselines3.common.vec_env.vec_normalize.VecNormalize": "__dict__, no env",
    "__getattr__ of stable_baselines3.common.vec_env.base_vec_env.VecEnvWrapper": "the wrapped env's attributes",
    # pickle's APPENDS and ADDITEMS call extend and add: a buffer stores the transitions it is given in its NumPy
    # arrays (shapes checked by NumPy)
    "extend of stable_baselines3.common.buffers.BaseBuffer": "adds transitions",
    "add of stable_baselines3.common.buffers.ReplayBuffer": "stores a transition",
    "add of stable_baselines3.common.buffers.RolloutBuffer": "stores a transition",
    # the spaces of Dict observations and of MultiDiscrete and MultiBinary actions: a Dict compares its subspaces and
    # sets only a space under a key; MultiDiscrete's __setstate__ makes the `start` an older version lacked (zeros of
    # the state's shape, allocated lazily), then Space's
    "__eq__ of gymnasium.spaces.dict.Dict": "compares its subspaces",
    "__setitem__ of gymnasium.spaces.dict.Dict": "a space under a key, else TypeError",
    "__eq__ of gymnasium.spaces.multi_binary.MultiBinary": "compares n",
    "__eq__ of gymnasium.spaces.multi_discrete.MultiDiscrete": "compares dtype, shape, nvec and start",
    "__setstate__ of gymnasium.spaces.multi_discrete.MultiDiscrete": "np.zeros start if missing, then Space's",
    # the Dict buffers' add takes six arguments: pickle's ADDITEMS passes one (TypeError)
    "add of stable_baselines3.common.buffers.DictReplayBuffer": "stores a transition",
    "add of stable_baselines3.common.buffers.DictRolloutBuffer": "stores a transition",
    # hindsight experience replay: its buffer's __setstate__ updates __dict__ and drops the env (set again with
    # set_env), its add takes six arguments; its goal selection strategy is an enum (Enum.__new__ looks a member up)
    "__setstate__ of stable_baselines3.her.her_replay_buffer.HerReplayBuffer": "__dict__, no env",
    "add of stable_baselines3.her.her_replay_buffer.HerReplayBuffer": "stores a transition",
    "__new__ of stable_baselines3.her.goal_selection_strategy.GoalSelectionStrategy": "Enum.__new__",
    # a torch module: Module's own hooks, reviewed with torch's pack
    "__setstate__ of stable_baselines3.common.policies.BaseModel": "Module's",
}


def spaces_env(action: object, goal: bool = False) -> object:
    """A small environment observing a Dict space (a position, a goal, a mode; or, with `goal`, the observation and
    achieved and desired goals HerReplayBuffer relabels, with their reward) and acting in `action` (the class is made
    here, where gymnasium is installed)."""
    import gymnasium as gym
    import numpy as np

    box = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
    keys = ("observation", "achieved_goal", "desired_goal") if goal else ("position", "goal")
    observed = {key: box for key in keys} | ({} if goal else {"mode": gym.spaces.Discrete(3)})

    class SpacesEnv(gym.Env):  # type: ignore[misc]
        observation_space = gym.spaces.Dict(observed)

        def __init__(self) -> None:
            self.action_space = action
            self.steps = 0

        def compute_reward(self, achieved: np.ndarray, desired: np.ndarray, info: object) -> np.ndarray:
            return -np.linalg.norm(achieved - desired, axis=-1)

        def reset(self, *, seed: int | None = None, options: object = None) -> tuple[object, dict[str, object]]:
            super().reset(seed=seed)
            self.steps = 0
            return self.observation_space.sample(), {}

        def step(self, act: object) -> tuple[object, float, bool, bool, dict[str, object]]:
            self.steps += 1
            return self.observation_space.sample(), 0.0, self.steps >= 8, False, {}

    return SpacesEnv()


def save_models(folder: Path) -> None:
    import gymnasium as gym
    import numpy as np
    import torch
    from stable_baselines3 import A2C, DDPG, DQN, PPO, SAC, TD3, HerReplayBuffer
    from stable_baselines3.common.noise import NormalActionNoise, OrnsteinUhlenbeckActionNoise
    from stable_baselines3.common.vec_env import DummyVecEnv, VecNormalize

    torch.manual_seed(0)
    runs = {
        "ppo": PPO("MlpPolicy", "CartPole-v1", n_steps=64, batch_size=32, n_epochs=1, seed=0),
        "a2c": A2C("MlpPolicy", "CartPole-v1", n_steps=8, seed=0,
                   policy_kwargs={"net_arch": [16, 16], "activation_fn": torch.nn.Tanh}),
        "dqn": DQN("MlpPolicy", "CartPole-v1", learning_starts=10, buffer_size=500, seed=0),
        "sac": SAC("MlpPolicy", "Pendulum-v1", learning_starts=10, buffer_size=500, batch_size=16, seed=0),
        "td3": TD3("MlpPolicy", "Pendulum-v1", learning_starts=10, buffer_size=300, seed=0),
        "ddpg": DDPG("MlpPolicy", "Pendulum-v1", learning_starts=10, buffer_size=300, seed=0),
    }
    for name, model in runs.items():
        model.learn(64)
        model.save(folder / f"sb3_{name}")
        if hasattr(model, "replay_buffer"):
            model.save_replay_buffer(folder / f"sb3_{name}_replay_buffer")
    # Environments whose observations are a Dict space (MultiInputPolicy: robot arms, goal-conditioned tasks) and whose
    # actions are MultiDiscrete or MultiBinary: the model's data keeps those spaces (review 74's sweep flagged them)
    actions = {"multidiscrete": gym.spaces.MultiDiscrete([3, 2]), "multibinary": gym.spaces.MultiBinary(3)}
    for name, action in actions.items():
        model = PPO("MultiInputPolicy", spaces_env(action), n_steps=32, batch_size=16, n_epochs=1, seed=0)
        model.learn(32)
        model.save(folder / f"sb3_ppo_dict_{name}")
    box = gym.spaces.Box(-1.0, 1.0, (2,))
    off_policy = {
        "dqn_dict": DQN("MultiInputPolicy", spaces_env(gym.spaces.Discrete(2)), learning_starts=10, buffer_size=100,
                        seed=0),
        **{f"{algorithm.__name__.lower()}_dict": algorithm("MultiInputPolicy", spaces_env(box), learning_starts=10,
                                                           buffer_size=100, batch_size=8, seed=0)
           for algorithm in (SAC, TD3, DDPG)},
        # exploration noise as SB3's TD3 and DDPG examples add it (the model keeps the noise object)
        "td3_noise": TD3("MlpPolicy", "Pendulum-v1", learning_starts=10, buffer_size=100, seed=0,
                         action_noise=NormalActionNoise(np.zeros(1), 0.1 * np.ones(1))),
        "ddpg_noise": DDPG("MlpPolicy", "Pendulum-v1", learning_starts=10, buffer_size=100, seed=0,
                           action_noise=OrnsteinUhlenbeckActionNoise(np.zeros(1), 0.1 * np.ones(1))),
        # hindsight experience replay on a goal-conditioned task (its buffer keeps the goal selection strategy)
        "sac_her": SAC("MultiInputPolicy", spaces_env(box, goal=True), replay_buffer_class=HerReplayBuffer,
                       learning_starts=20, buffer_size=200, batch_size=8, seed=0),
    }
    for name, model in off_policy.items():
        model.learn(40)
        model.save(folder / f"sb3_{name}")
        model.save_replay_buffer(folder / f"sb3_{name}_replay_buffer")
    env = VecNormalize(DummyVecEnv([lambda: gym.make("CartPole-v1")]))
    normalized = PPO("MlpPolicy", env, n_steps=32, batch_size=16, n_epochs=1, seed=0)
    normalized.learn(64)
    normalized.save(folder / "sb3_ppo_vecnormalize")
    env.save(str(folder / "sb3_vec_normalize.pkl"))


def torch_optimizers() -> list[str]:
    """torch's optimizer classes, as values: A2C keeps RMSprop as its policy's `optimizer_class` (so do skorch and
    darts keep theirs), which the loader calls with the network's parameters; a constructor only stores them and the
    defaults. (allow-torch lists them as restored from state only.)"""
    import torch.optim

    found = {f"{value.__module__}.{value.__qualname__}" for value in vars(torch.optim).values()
             if isinstance(value, type) and issubclass(value, torch.optim.Optimizer)}
    return sorted(found)


def algorithm_methods() -> list[str]:
    """The methods and properties of stable-baselines3's algorithms: a `data` key with one of these names replaces
    it on the loaded model (WS-REPO-033)."""
    import inspect

    from stable_baselines3 import A2C, DDPG, DQN, PPO, SAC, TD3

    names = {name for algorithm in (A2C, DDPG, DQN, PPO, SAC, TD3) for name in dir(algorithm)
             if inspect.isroutine(static := inspect.getattr_static(algorithm, name))
             or isinstance(static, property | classmethod | staticmethod)}
    return sorted(names)


def pickles(path: Path) -> list[bytes]:
    """The pickles stable-baselines3's loaders unpickle from one file: the `:serialized:` values of a zip's data."""
    if path.suffix != ".zip":
        return [path.read_bytes()]
    data = json.loads(zipfile.ZipFile(path).read("data"))
    return [base64.b64decode(value[":serialized:"]) for value in data.values()
            if isinstance(value, dict) and ":serialized:" in value]


def main() -> None:
    args = catalogue_arguments(__doc__.splitlines()[0], SB3_CLASS_HOOKS, SB3_OWNER_HOOKS)
    names: set[str] = set()
    members: set[str] = set()
    with tempfile.TemporaryDirectory() as folder:
        save_models(Path(folder))
        for path in sorted(Path(folder).iterdir()):
            for blob in pickles(path):
                record_imports(io.BytesIO(blob), names)
                _callable_attributes(pickle.loads(blob), members, LIBRARIES)  # this tool's own file
        if args.keep:
            shutil.copytree(folder, args.keep, dirs_exist_ok=True)
    own = sorted(n for n in names if n.startswith(LIBRARIES))
    classes = sorted({n for n in own if isinstance(_resolve(n), type)} | set(EXTRACTORS))
    functions = [n for n in own if not isinstance(_resolve(n), type)]
    allowed, state_only = screened_names(classes)
    import stable_baselines3

    write_pack(
        "allow-sb3",
        f"Generated by tools/gen_sb3_allowlist.py (stable-baselines3 {stable_baselines3.__version__}): what its saved "
        "models (the cloudpickles in a model zip's data), replay buffers and VecNormalize statistics import, recorded "
        "from real saves: classes restored from state only, each screened for the hooks loading runs, kept as values "
        "too (the loader builds the policy from its class); their method names and the classes that cannot be "
        "called. A learning rate saved as a lambda is code in the file, critical whatever this pack says.\n",
        {
            "allowed-callables": allowed,
            "state-only-classes": state_only,
            "value-classes": state_only + torch_optimizers(),
            "referenced-callables": functions + REFERENCED,
            "method-names": methods(allowed),
            "inert-values": [n for n in allowed if not callable_instances(_resolve(n))],  # type: ignore[arg-type]
            "callable-members": sorted(members),
            "sb3-algorithm-methods": algorithm_methods(),
            # what `_excluded_save_params` always leaves out of `data`, which the loader would set all the same
            "sb3-unsaved-keys": ["policy", "device", "env", "replay_buffer", "rollout_buffer", "_vec_normalize_env",
                                 "_logger", "_custom_logger"],
        },
    )


if __name__ == "__main__":
    main()

"""The names a config pastes or splits (jobs.loading.names), each rule on a payload only it refuses: an
environment variable name's first character and its others, its end (a `$`-anchored match would let a trailing
newline through), each line-breaking Unicode category, and a benchmark's '/' that a model may hold."""
from __future__ import annotations

import pytest

from jobs.config import ConfigError, ModelConfig
from jobs.engines.http.settings import ApiSettings
from jobs.loading.names import ENV_NAME, check_env_names, check_name, has_control


def _model(**env: str) -> ModelConfig:
    """An API model whose `api:` section names the variables `env` gives (api.key_env=... as key_env=...)."""
    return ModelConfig(name="judge", path="gpt-4o-mini", kind="api", engine="http",
                       api=ApiSettings(**{key.removeprefix("api."): value for key, value in env.items()}))


@pytest.mark.parametrize("name", ["K", "_", "_KEY", "a1_", "JUDGE_KEY_2", "k" * 200])
def test_an_environment_variable_name_is_accepted(name):
    assert ENV_NAME.fullmatch(name)
    check_env_names(_model(key_env=name, base_env=name), "s.yaml: key 'models.judge")


@pytest.mark.parametrize("name", [
    "1KEY",  # a digit first: only the first character's class refuses it
    "KEY-X", "KEY.X", "KEY X",  # a character past the first that only the second class refuses
    "KEY\n",  # refused by fullmatch only: re.match(r"...$") accepts a trailing newline
    "KÉY",  # a letter outside ASCII
    "",  # no character at all
])
@pytest.mark.parametrize("key", ["api.key_env", "api.base_env"])
def test_a_value_that_is_no_environment_variable_name_is_refused_naming_its_key(name, key):
    with pytest.raises(ConfigError) as error:
        check_env_names(_model(**{key: name}), "s.yaml: key 'models.judge")
    assert str(error.value) == (f"s.yaml: key 'models.judge.{key}': {name!r} is not an environment variable name "
                                "(letters, digits and '_', not starting with a digit)")


def test_unset_credential_variables_are_not_checked():
    check_env_names(_model(), "s.yaml: key 'models.judge")  # both None


@pytest.mark.parametrize("text", ["a\nb", "a\tb", "a\x1bb", "a\x00", "\x7f", "a\u0085b",  # Cc
                                  "a\u2028b",  # Zl
                                  "a\u2029b"])  # Zp
def test_each_line_breaking_category_is_control(text):
    assert has_control(text)


@pytest.mark.parametrize("text", ["", "plain", "a b", "a\u00a0b", "a\u200bb", "ü/é ..x", "\u3000"])
def test_spaces_format_characters_and_unicode_are_not_control(text):
    assert not has_control(text)  # Zs (no-break space, ideographic space) and Cf (zero-width space) stay


@pytest.mark.parametrize("what", ["benchmark", "model"])
@pytest.mark.parametrize("name, why", [
    ("", "is empty"),
    ("a\nb", "holds a line break or another control character"),
    ("a\u2029b", "holds a line break or another control character"),
])
def test_an_empty_or_multi_line_name_is_refused_for_either(what, name, why):
    with pytest.raises(ConfigError) as error:
        check_name(name, what, "benchmarks", "s.yaml")
    assert str(error.value) == f"s.yaml: key 'benchmarks': {what} name {name!r} {why}"


def test_only_a_benchmark_name_may_not_hold_a_slash():
    with pytest.raises(ConfigError) as error:
        check_name("rag/bench", "benchmark", "benchmarks", "s.yaml")
    assert str(error.value) == ("s.yaml: key 'benchmarks': benchmark name 'rag/bench' holds '/', which separates "
                                "the benchmark from the model in cell keys ('benchmark/model')")
    check_name("org/judge", "model", "models", "s.yaml")  # a hub id
    check_name("/", "model", "models", "s.yaml")


def test_a_multi_line_benchmark_name_with_a_slash_is_refused_for_its_line_break():
    with pytest.raises(ConfigError, match="holds a line break"):
        check_name("a/\nb", "benchmark", "benchmarks", "s.yaml")


@pytest.mark.parametrize("name", ["x", "RAG Reward.Bench v1 ü", " ", "a\u00a0b"])
def test_one_line_names_without_a_slash_are_accepted(name):
    check_name(name, "benchmark", "benchmarks", "s.yaml")
    check_name(name, "model", "models", "s.yaml")

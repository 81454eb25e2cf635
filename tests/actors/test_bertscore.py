"""actors.bertscore: the encoder stage computes bert-score's own BERTScore wherever its model folder lies (issue
62: bert-score loads any name with "t5" in it as T5, a BERT folder's weights then all random)."""
import json

import numpy as np
import pytest
from bertscore_own import bertscore_own

from actors.bertscore import BertScoreStage, scorer_name
from actors.built_in_models import MINILM, resolve_model

CANDIDATE = "The capital of France is Paris, which is also its largest city."
REFERENCE = "Paris is the capital and the most populous city of France."


def test_a_folder_is_named_to_bert_score_by_its_config_not_by_the_letters_of_its_path(tmp_path):
    bert = tmp_path / "mt5-runs" / "minilm"  # "t5" in the path, a BERT model in the folder
    bert.parent.mkdir()
    bert.symlink_to(resolve_model(MINILM), target_is_directory=True)
    assert "t5" not in scorer_name(str(bert)) and scorer_name(str(bert)) == str(bert)
    t5 = tmp_path / "encoder"
    t5.mkdir()
    (t5 / "config.json").write_text(json.dumps({"model_type": "t5"}))
    assert "t5" in scorer_name(str(t5)) and scorer_name(str(t5)) == str(t5)
    plain = resolve_model(MINILM)
    assert scorer_name(plain) is plain and scorer_name("google-t5/t5-base") == "google-t5/t5-base"  # hub ids: bert-score's rule


@pytest.mark.parametrize("under", ["plain", "t5x"])
def test_the_stage_is_bert_scores_own_wherever_the_folder_is(tmp_path, under):
    folder = tmp_path / under / "minilm"
    folder.parent.mkdir()
    folder.symlink_to(resolve_model(MINILM), target_is_directory=True)
    stage = BertScoreStage({"model": MINILM, "folder": str(folder), "num_layers": 6, "lang": "en",
                            "rescale_with_baseline": False, "batch_size": 32})
    runtime = json.loads(stage.runtime)
    assert (runtime["model_class"], runtime["dtype"]) == ("BertModel", "float32")
    out = stage({"pair_id": np.array(["p"]), "candidate": np.array([CANDIDATE]), "reference": np.array([REFERENCE])})
    precision, recall = bertscore_own(resolve_model(MINILM), [CANDIDATE], [REFERENCE], 6, tmp_path / "reference")
    assert out["recall"][0] == pytest.approx(recall[0], abs=1e-5)
    assert out["precision"][0] == pytest.approx(precision[0], abs=1e-5)
    assert json.loads(out["runtime"][0]) == runtime

"""jobs.flow.text_pairs: the encoder stage in its Ray actors computes bert-score's own BERTScore wherever the
model folder lies, and says from inside the actor what it computed with (issue 62: a folder whose path held
"t5" was loaded by bert-score as T5, every weight random)."""
import pytest
from bertscore_own import bertscore_own

from actors.bertscore import encoder_label
from actors.built_in_models import MINILM, resolve_model
from jobs.flow.text_pairs import encoders_used, score_pairs

pytestmark = pytest.mark.integration
PAIRS = [("The capital of France is Paris, which is also its largest city.",
          "Paris is the capital and the most populous city of France."),
         ("Interest on a savings account is taxed as ordinary income.",
          "You pay income tax on the interest your savings earn, at your usual rate."),
         ("I don't know.", "The museum opens at nine on weekdays.")]


def test_the_actors_compute_bert_scores_own_from_a_folder_whose_path_says_t5(tmp_path, ray_session):
    folder = tmp_path / "t5x" / "minilm"
    folder.parent.mkdir()
    folder.symlink_to(resolve_model(MINILM), target_is_directory=True)
    encoder = {"model": str(folder), "num_layers": 6, "lang": "en", "rescale_with_baseline": False,
               "batch_size": 2, "actors": 1, "num_cpus": 1, "num_gpus": 0}
    scores = score_pairs([{"pair_id": str(i), "candidate": c, "reference": r} for i, (c, r) in enumerate(PAIRS)],
                         encoder)
    used = encoders_used()[encoder_label(encoder)]  # as the actor said it, one record
    assert [(r["model_class"], r["dtype"]) for r in used] == [("BertModel", "float32")]
    assert (used[0]["float32_matmul_precision"], used[0]["autocast"]) == ("highest", False)
    precision, recall = bertscore_own(str(folder), [c for c, _ in PAIRS], [r for _, r in PAIRS], 6,
                                      tmp_path / "reference")
    for i in range(len(PAIRS)):
        assert scores[str(i)]["recall"] == pytest.approx(recall[i], abs=1e-5)
        assert scores[str(i)]["precision"] == pytest.approx(precision[i], abs=1e-5)

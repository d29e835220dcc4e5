;; A director-evaluator loop in hoidn/llm's shape, twice: as a workflow (`defworkflow`, run by the same
;; engine and checked by the same rules as a YAML workflow) and as a script (`director-evaluator`).
;;
;; Loading this folder registers the `defschema`, `defatom` and `defworkflow` forms. Run the workflow with
;;   atomtask workflow run refine_draft -i brief="A two-line poem about tides"
;; and the script at the bottom with
;;   atomtask eval templates/director_evaluator.sexp -i brief="A two-line poem about tides"

(defschema Critique "An editor's verdict on a draft."
  (score int "Quality from 0 (unusable) to 10 (perfect)" (ge 0) (le 10))
  (approved bool "True when the draft fulfils the brief as it is")
  (feedback str "The one change that would improve the draft most"))

(defatom plan_draft
  (description "Direct: plan the next draft of a piece of writing")
  (params (brief str "What to write")
          (feedback str "The editor's feedback on the last draft, or `none yet`"))
  (system "You direct a writer. Give a short, concrete plan; no prose of the piece itself.")
  (instructions "Plan a draft for this brief: {{brief}}\n\nFeedback on the last draft: {{feedback}}"))

(defatom write_draft
  (description "Execute: write a draft following a plan")
  (params (brief str "What to write")
          (plan str "The director's plan"))
  (system "You are a skilled writer. Follow the plan exactly.")
  (instructions "Brief: {{brief}}\n\nPlan: {{plan}}\n\nWrite the draft."))

(defatom critique_draft
  (description "Evaluate: judge a draft against its brief")
  (params (brief str "What was asked for")
          (draft str "The draft to judge"))
  (system "You are a demanding editor. Approve only a draft you would publish as it is.")
  (instructions "Brief: {{brief}}\n\nDraft:\n{{draft}}\n\nJudge the draft.")
  (output_format ((type "json") (schema "Critique") (mode "tool"))))

;; The loop as a workflow: direct -> execute -> evaluate, back to direct until the critique approves,
;; at most three rounds: the fourth visit of `direct` is over its `max_visits`, which ends the run normally.
(defworkflow refine_draft
  (version "1.0")
  (description "Direct, write and critique a draft until the editor approves it, at most three rounds.")
  (state (brief str "What to write")
         (feedback str (default "none yet"))
         (plan str)
         (draft str)
         (critique Critique?)
         (rounds int (default 0)))
  (limits (requests 9))
  (steps
    (step direct (task plan_draft)
          (inputs (brief "{{state.brief}}") (feedback "{{state.feedback}}"))
          (output plan)
          (max_visits 3)
          (on_max_visits end))
    (step execute (task write_draft)
          (inputs (brief "{{state.brief}}") (plan "{{state.plan}}"))
          (output draft))
    (step evaluate (task critique_draft)
          (inputs (brief "{{state.brief}}") (draft "{{state.draft}}"))
          (output critique)
          (set (rounds "state.rounds + 1")
               (feedback "state.critique.feedback"))
          (route ((when "not state.critique.approved") (to direct))
                 end))))

;; The loop as a script: the same three tasks, with the decision in the `until` function.
(define (feedback-of critique)
  (if critique
      (concat "score " (get-field critique "score") "/10: " (get-field critique "feedback"))
      "none yet"))

(director-evaluator
  (max-rounds 3)
  (direct (lambda (critique round)
            (unwrap (plan_draft (brief brief) (feedback (feedback-of critique))))))
  (execute (lambda (plan) (unwrap (write_draft (brief brief) (plan plan)))))
  (evaluate (lambda (draft) (unwrap (critique_draft (brief brief) (draft draft)))))
  (until (lambda (critique) (get-field critique "approved"))))

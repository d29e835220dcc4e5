;; A two-step pipeline: find who wrote a customer message, then draft a reply to that person.
;;
;; Loading this folder (`TaskSystem(templates="templates/")`, `atomtask run`, ...) registers the
;; `defschema` and `defatom` forms only. The script at the bottom runs with
;;   atomtask eval templates/pipeline.sexp -i message="Hi, it's Ada Lovelace (ada@example.com): my invoice is wrong."
;; where each `-i name=value` is bound as a variable (`message` here).

(defschema Reply "A short reply to a customer."
  (greeting str "How to address the person, e.g. 'Dear Ms Lovelace,'")
  (body str "The reply itself, at most three sentences"))

(defatom find_sender
  (params (message str "The customer's message"))
  (description "Find who wrote a customer message")
  (system "You are a careful data-entry clerk. Copy values exactly as written; never invent them.")
  (instructions "Who wrote this message? Give their contact details.\n\n{{message}}")
  (output_format ((type "json") (schema "Contact") (mode "tool")))   ; Contact is declared in schemas.yaml
  (retries 2))

(defatom draft_reply
  (params (sender Contact "Who wrote the message")
          (message str "The customer's message")
          (tone str "How the reply should sound" (default "friendly")))
  (description "Draft a reply to a customer, addressed to the sender")
  (system "You answer customer messages for a small company. Be brief and concrete.")
  (instructions "Write a {{tone}} reply to {{sender.name}} about their message:\n\n{{message}}")
  (output_format ((type "json") (schema "Reply"))))

;; The script: the first task's validated Contact feeds the second task.
(let ((sender (unwrap (find_sender (message message)))))
  (draft_reply (sender sender) (message message)))

;;; emacs_example_test.el --- the Emacs example (examples/emacs) used as a user would  -*- lexical-binding: t -*-

;; NEXTPAGE=/path/to/nextpage emacs --batch -Q -l Tests/Editors/emacs_example_test.el
;;
;; Run from the repository root.  Loads examples/emacs/nextpage.el, runs
;; `nextpage-list' on the built-in demo (the server runs in a new empty
;; folder) and types `>' (end-of-buffer, through the command loop, so the
;; mode's `post-command-hook' sees point at the end) until the list says it
;; has ended; checks the buffer holds the demo's 250 names, one line each, in
;; order.  Then: `g' reloads the first page; the whole-item view
;; (`nextpage-field' nil) paged with `n'; an unknown collection shown as an
;; error; killing each buffer ends its server with status 0.  Every wait is
;; bounded; the first failed check is printed and Emacs exits 1.

(require 'cl-lib)

(defconst nextpage-test-timeout 20 "Seconds any one wait may take.")
(defconst nextpage-test-demo-items 250)
(defconst nextpage-test-demo-pages 10)

(define-error 'nextpage-test-failed "check failed")

(defun nextpage-test-check (condition format-string &rest args)
  "Signal `nextpage-test-failed' with FORMAT-STRING and ARGS unless CONDITION."
  (unless condition
    (signal 'nextpage-test-failed (list (apply #'format format-string args)))))

(defun nextpage-test-wait (what condition)
  "Let Emacs read process output until CONDITION returns non-nil (bounded).
WHAT says what is awaited."
  (let ((deadline (+ (float-time) nextpage-test-timeout)))
    (while (not (funcall condition))
      (nextpage-test-check (< (float-time) deadline) "timed out after %d s waiting for %s" nextpage-test-timeout what)
      (accept-process-output nil 0.05))))

(defun nextpage-test-idle (buffer)
  "Wait until BUFFER's list has no page loading."
  (nextpage-test-wait "a page to land" (lambda () (not (buffer-local-value 'nextpage--loading buffer)))))

(defun nextpage-test-lines (buffer)
  "The lines of BUFFER."
  (with-current-buffer buffer (split-string (buffer-string) "\n" t)))

(defun nextpage-test-type (buffer keys)
  "Type KEYS in BUFFER's window, through the command loop."
  (pop-to-buffer-same-window buffer)
  (execute-kbd-macro (kbd keys)))

(defun nextpage-test-kill-and-expect-exit (buffer what)
  "Kill BUFFER and check its server ends with status 0.  WHAT names the list."
  (let ((process (jsonrpc--process (buffer-local-value 'nextpage--connection buffer))))
    (kill-buffer buffer)
    (nextpage-test-wait (format "%s: its server to exit after the buffer was killed" what)
                        (lambda () (process-get process 'nextpage-exit)))
    (nextpage-test-check (equal (process-get process 'nextpage-exit) '(exit . 0))
                         "%s: the server ended with %S, expected (exit . 0)" what (process-get process 'nextpage-exit))))

(defun nextpage-test-main ()
  "Run every check; return a one-line summary."
  (let ((binary (getenv "NEXTPAGE"))
        (example (expand-file-name "examples/emacs/nextpage.el"))
        (folder (make-temp-file "nextpage-emacs-example-" t))
        (presses 0)
        demo lines)
    (nextpage-test-check (and binary (file-executable-p binary)) "set NEXTPAGE to the nextpage binary (got %S)" binary)
    (nextpage-test-check (file-readable-p example) "run from the repository root (no %s)" example)
    ;; Installed as the README says: loaded, then configured.
    (load example nil t)
    (setq nextpage-command (list binary "--log-level" "warning")
          nextpage-directory folder)

    ;; The demo, shown by name; `>' until the end.
    (setq demo (nextpage-list "demo"))
    (nextpage-test-check (and (bufferp demo) (eq (buffer-local-value 'major-mode demo) 'nextpage-mode)
                              (provided-mode-derived-p 'nextpage-mode 'special-mode))
                         "nextpage-list opened no nextpage-mode buffer: %S" demo)
    (nextpage-test-idle demo)
    (while (buffer-local-value 'nextpage--has-next demo)
      (cl-incf presses)
      (nextpage-test-check (<= presses (+ nextpage-test-demo-pages 5)) "still not at the end after typing > %d times" (1- presses))
      (let ((before (buffer-local-value 'nextpage--count demo)))
        (nextpage-test-type demo ">")
        (nextpage-test-check (or (buffer-local-value 'nextpage--loading demo)
                                 (> (buffer-local-value 'nextpage--count demo) before))
                             "> at the end of the list loaded nothing")
        (nextpage-test-idle demo)
        (nextpage-test-check (not (string-prefix-p "error" (buffer-local-value 'nextpage--status demo)))
                             "the list shows %s" (buffer-local-value 'nextpage--status demo))))
    (setq lines (nextpage-test-lines demo))
    (nextpage-test-check (= (length lines) nextpage-test-demo-items) "%d lines in the buffer, expected %d" (length lines) nextpage-test-demo-items)
    (cl-loop for line in lines for index from 1 do
             (nextpage-test-check (and (string-match "\\`[a-z]+ [a-z]+ \\([0-9]+\\)\\'" line)
                                       (= (string-to-number (match-string 1 line)) index))
                                  "line %d is %S: not the demo's item %d by name (each once, in order)" index line index))
    (nextpage-test-check (= presses (1- nextpage-test-demo-pages)) "%d pages loaded by >, expected %d after the first"
                         presses (1- nextpage-test-demo-pages))
    (with-current-buffer demo
      (nextpage-test-check (equal nextpage--status "end, 250 items") "the list's status is %S" nextpage--status)
      ;; format-mode-line gives "" in batch: check that the mode line shows the status.
      (nextpage-test-check (memq 'nextpage--status (flatten-tree mode-line-process)) "mode line: %S" mode-line-process)
      (nextpage-test-check (and (overlayp nextpage--status-overlay)
                                (= (overlay-start nextpage--status-overlay) (point-max))
                                (string-match-p "end, 250 items" (overlay-get nextpage--status-overlay 'after-string)))
                           "the status after the items is not shown at the end")
      (nextpage-test-check buffer-read-only "the list buffer is writable"))

    ;; g: reload from the first page.
    (nextpage-test-type demo "g")
    (nextpage-test-idle demo)
    (setq lines (nextpage-test-lines demo))
    (nextpage-test-check (and (= (length lines) (/ nextpage-test-demo-items nextpage-test-demo-pages))
                              (string-suffix-p " 1" (car lines))
                              (buffer-local-value 'nextpage--has-next demo))
                         "g: %d lines after reloading, first %S" (length lines) (car lines))
    (nextpage-test-kill-and-expect-exit demo "the demo list")

    ;; nextpage-field nil: each line is the whole item as compact JSON; n
    ;; loads the next page from anywhere.
    (let* ((whole (let ((nextpage-field nil)) (nextpage-list "demo"))))
      (nextpage-test-idle whole)
      (with-current-buffer whole (goto-char (point-min)))
      (nextpage-test-type whole "n")
      (nextpage-test-idle whole)
      (let ((whole-lines (nextpage-test-lines whole)))
        (nextpage-test-check (= (length whole-lines) (* 2 (/ nextpage-test-demo-items nextpage-test-demo-pages)))
                             "whole-item list: %d lines after n" (length whole-lines))
        (cl-loop for line in whole-lines for index from 1
                 for item = (json-parse-string line :object-type 'plist)
                 do (nextpage-test-check (and (eql (plist-get item :id) index) (stringp (plist-get item :name))
                                              (vectorp (plist-get item :tags)))
                                         "whole-item list: line %d is %S" index line)))
      (nextpage-test-check (= (line-number-at-pos (with-current-buffer whole (point))) 1) "n moved point")
      (nextpage-test-kill-and-expect-exit whole "the whole-item list"))

    ;; An unknown collection: the list says so; its server keeps running.
    (let ((unknown (nextpage-list "no-such-collection")))
      (nextpage-test-idle unknown)
      (nextpage-test-check (string-match-p "\\`error -32001: .*no-such-collection" (buffer-local-value 'nextpage--status unknown))
                           "unknown collection: the list shows %S" (buffer-local-value 'nextpage--status unknown))
      (nextpage-test-check (jsonrpc-running-p (buffer-local-value 'nextpage--connection unknown))
                           "unknown collection: the server exited")
      (nextpage-test-kill-and-expect-exit unknown "the unknown collection's list"))

    (delete-directory folder t)
    (format "emacs_example_test (Emacs %s): nextpage-list demo + > x%d: %d lines, in order; g reloads; whole items with n; unknown collection shown; servers exit 0 on kill-buffer"
            emacs-version presses nextpage-test-demo-items)))

(condition-case failure
    (progn
      (princ (concat (nextpage-test-main) "\n"))
      (kill-emacs 0))
  (nextpage-test-failed
   (message "emacs_example_test: FAILED: %s" (cadr failure))
   (kill-emacs 1))
  (error
   (message "emacs_example_test: FAILED with an error: %S" failure)
   (kill-emacs 1)))

;;; emacs_example_test.el ends here

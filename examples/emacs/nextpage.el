;;; nextpage.el --- List a nextpage collection, loading more at the end  -*- lexical-binding: t -*-

;; Package-Requires: ((emacs "27.1") (jsonrpc "1.0.9"))
;; Keywords: tools, comm

;;; Commentary:

;; M-x nextpage-list RET demo RET opens a buffer listing the items of a
;; collection that nextpage serves, one line per item.  When point reaches
;; the last line (by any command: `>', M->, C-n, scrolling with SPC), the
;; next page is loaded with nextpage's `loadNext' (`ifLoading': "skip", and
;; `fields', so only the shown member of each item crosses the pipe); `n'
;; loads the next page from anywhere, `g' reloads from the first page, `q'
;; quits.  The mode line and a line after the items say "loading…",
;; "more below", or "end".  Each list buffer runs its own nextpage process
;; through jsonrpc.el (Eglot's transport, built into Emacs 27 and later);
;; killing the buffer ends it with `shutdown' and `exit'.

;;; Code:

(require 'cl-lib)
(require 'jsonrpc)

(defgroup nextpage nil
  "List collections served by nextpage."
  :group 'tools)

(defcustom nextpage-command '("nextpage" "--log-level" "warning")
  "The nextpage server's argv."
  :type '(repeat string))

(defcustom nextpage-directory nil
  "Folder the server runs in, where it reads nextpage.json.
nil: the `default-directory' of the buffer `nextpage-list' is called
from.  With no nextpage.json, nextpage serves its built-in `demo'."
  :type '(choice (const :tag "The current buffer's folder" nil) directory))

(defcustom nextpage-field "name"
  "The member of each item shown on its line.
A member name (\"name\") or a JSON Pointer (\"/user/login\"); nil shows
each whole item as compact JSON."
  :type '(choice (const :tag "The whole item as JSON" nil) string))

(defcustom nextpage-exit-timeout 2
  "Seconds a list's server has to answer `shutdown' and exit before it is killed."
  :type 'number)

(defvar-local nextpage--connection nil "This list's jsonrpc connection.")
(defvar-local nextpage--collection nil "The collection this buffer lists.")
(defvar-local nextpage--fields nil "The `fields' param sent, or nil.")
(defvar-local nextpage--key nil "The item member shown, as a keyword, or nil.")
(defvar-local nextpage--has-next t "Whether the collection has more pages.")
(defvar-local nextpage--loading nil "Whether a page is being loaded.")
(defvar-local nextpage--count 0 "Items in the buffer.")
(defvar-local nextpage--status "" "What the list says about its state.")
(defvar-local nextpage--status-overlay nil "The overlay showing the status after the items.")

(defvar nextpage-mode-map
  (let ((map (make-sparse-keymap)))
    (define-key map "n" #'nextpage-load-more)
    map)
  "Keys of `nextpage-mode', besides `special-mode''s.")

(define-derived-mode nextpage-mode special-mode "NextPage"
  "A list of the items of a nextpage collection.
Reaching the last line loads the next page.
\\{nextpage-mode-map}"
  (setq-local truncate-lines t)
  (setq-local mode-line-process '(" [" nextpage--status "]"))
  (setq-local revert-buffer-function #'nextpage--revert)
  (add-hook 'post-command-hook #'nextpage--load-at-end nil t)
  (add-hook 'kill-buffer-hook #'nextpage--close nil t))

(defvar json-false)
(defvar json-null)
(declare-function json-encode "json" (object))

(defun nextpage--json (value)
  "Encode VALUE, a JSON value as jsonrpc.el gives it, as compact JSON."
  (if (fboundp 'json-serialize)
      (json-serialize value :false-object :json-false :null-object nil)
    (require 'json)
    (let ((json-false :json-false) (json-null nil))
      (json-encode value))))

(defun nextpage--pointer (field)
  "FIELD as (POINTER . KEY): a JSON Pointer and the keyword of its last token."
  (let* ((pointer (if (string-prefix-p "/" field)
                      field
                    (concat "/" (replace-regexp-in-string
                                 "/" "~1" (replace-regexp-in-string "~" "~0" field t t) t t))))
         (last (car (last (split-string pointer "/"))))
         (name (replace-regexp-in-string "~0" "~" (replace-regexp-in-string "~1" "/" last t t) t t)))
    (cons pointer (intern (concat ":" name)))))

(defun nextpage--line (item)
  "The line showing ITEM."
  (let* ((value (if (and nextpage--key (plist-member item nextpage--key))
                    (plist-get item nextpage--key)
                  item))
         (text (if (stringp value) value (nextpage--json value))))
    (replace-regexp-in-string "\n" " " text t t)))

(defun nextpage--show-status (status)
  "Show STATUS in the mode line and after the last item."
  (setq nextpage--status status)
  (unless (overlayp nextpage--status-overlay)
    (setq nextpage--status-overlay (make-overlay (point-max) (point-max))))
  (move-overlay nextpage--status-overlay (point-max) (point-max))
  (overlay-put nextpage--status-overlay 'after-string
               (propertize (concat "-- " status " --") 'face 'shadow))
  (force-mode-line-update))

(defun nextpage--insert (items)
  "Append ITEMS (a vector), one line each, leaving point where it is."
  (let ((inhibit-read-only t))
    (save-excursion
      (goto-char (point-max))
      (cl-loop for item across items do (insert (nextpage--line item) "\n"))))
  (cl-incf nextpage--count (length items)))

(defun nextpage--at-end-p ()
  "Whether point is on the last item line or after it."
  (save-excursion (forward-line 1) (eobp)))

(defun nextpage--load-at-end ()
  "Load the next page when point has reached the end (in `post-command-hook')."
  (when (nextpage--at-end-p)
    (nextpage-load-more)))

(defun nextpage--request (method params on-result)
  "Send METHOD with PARAMS; call ON-RESULT with its result in this buffer.
An error, or no reply in time, is shown as the status."
  (let ((buffer (current-buffer)))
    (setq nextpage--loading t)
    (nextpage--show-status "loading…")
    (cl-flet ((in-buffer (function)
                (lambda (&rest args)
                  (when (buffer-live-p buffer)
                    (with-current-buffer buffer
                      (setq nextpage--loading nil)
                      (apply function args))))))
      (jsonrpc-async-request
       nextpage--connection method params
       :success-fn (in-buffer on-result)
       :error-fn (in-buffer (jsonrpc-lambda (&key code message &allow-other-keys)
                              (nextpage--show-status
                               (format "error %s: %s (n to retry)" code message))))
       :timeout-fn (in-buffer (lambda ()
                                (nextpage--show-status "no reply in time (n to retry)")))))))

(defun nextpage--land (page)
  "Put PAGE into the buffer: a Page result, as jsonrpc.el gives it."
  (unless (eq (plist-get page :skipped) t)
    (nextpage--insert (plist-get page :items))
    (setq nextpage--has-next (eq (plist-get page :hasNext) t)))
  (nextpage--show-status (if nextpage--has-next
                             (format "%d items, more below" nextpage--count)
                           (format "end, %d items" nextpage--count))))

(defun nextpage--params (&rest more)
  "This list's params: the collection, `fields', and MORE."
  `(:collection ,nextpage--collection
    ,@(and nextpage--fields `(:fields ,nextpage--fields))
    ,@more))

(defun nextpage-load-more ()
  "Load the next page of this list, unless one is loading or the list has ended."
  (interactive)
  (when (and nextpage--connection (not nextpage--loading) nextpage--has-next)
    (if (not (jsonrpc-running-p nextpage--connection))
        (nextpage--show-status "nextpage is not running")
      (nextpage--request :loadNext (nextpage--params :ifLoading "skip") #'nextpage--land))))

(defun nextpage--revert (&rest _)
  "Reload the list from its first page (nextpage's `load')."
  (when (and nextpage--connection (not nextpage--loading) (jsonrpc-running-p nextpage--connection))
    (let ((inhibit-read-only t)) (erase-buffer))
    (setq nextpage--count 0 nextpage--has-next t)
    (nextpage--request :load (nextpage--params) #'nextpage--land)))

(defun nextpage--close ()
  "End this list's server: `shutdown', then `exit' (in `kill-buffer-hook').
The server is given `nextpage-exit-timeout' seconds to exit by itself
before it is killed (`jsonrpc-shutdown', as Eglot calls it right after
`exit', kills a process whose exit it has not seen yet)."
  (let ((connection nextpage--connection))
    (setq nextpage--connection nil)
    (when (and connection (jsonrpc-running-p connection))
      (let ((process (jsonrpc--process connection)))
        (jsonrpc-async-request connection :shutdown nil
                               :success-fn (lambda (_) (jsonrpc-notify connection :exit nil))
                               :timeout nextpage-exit-timeout)
        (run-with-timer nextpage-exit-timeout nil
                        (lambda () (when (process-live-p process) (delete-process process))))))))

;;;###autoload
(defun nextpage-list (collection)
  "List COLLECTION in a buffer, loading the next page when point reaches the end.
The server is `nextpage-command', run in `nextpage-directory'.
Return the buffer."
  (interactive (list (read-string "Collection (default demo): " nil nil "demo")))
  (let* ((buffer (generate-new-buffer (format "*nextpage %s*" collection)))
         (name (buffer-name buffer))
         (directory (file-name-as-directory (expand-file-name (or nextpage-directory default-directory))))
         (argv nextpage-command))
    (with-current-buffer buffer
      (nextpage-mode)
      (setq nextpage--collection collection)
      (when nextpage-field
        (pcase-let ((`(,pointer . ,key) (nextpage--pointer nextpage-field)))
          (setq nextpage--fields (vector pointer) nextpage--key key)))
      (setq nextpage--connection
            (make-instance
             'jsonrpc-process-connection
             :name name
             :events-buffer-scrollback-size 0
             :process (lambda ()
                        (let ((default-directory directory))
                          (make-process :name name :command argv
                                        :connection-type 'pipe :coding 'utf-8-emacs-unix :noquery t
                                        :stderr (get-buffer-create (format "*%s stderr*" name)))))
             :on-shutdown (lambda (connection)
                            (let ((process (jsonrpc--process connection)))
                              (process-put process 'nextpage-exit
                                           (cons (process-status process) (process-exit-status process)))
                              ;; The server's buffers; its stderr stays when it failed.
                              (when (buffer-live-p (process-buffer process))
                                (kill-buffer (process-buffer process)))
                              (when (and (eql (process-exit-status process) 0)
                                         (buffer-live-p (jsonrpc-stderr-buffer connection)))
                                (kill-buffer (jsonrpc-stderr-buffer connection)))
                              (when (buffer-live-p buffer)
                                (with-current-buffer buffer
                                  (setq nextpage--loading nil)
                                  (nextpage--show-status
                                   (format "nextpage exited (status %d)" (process-exit-status process)))))))))
      (nextpage-load-more))
    (pop-to-buffer-same-window buffer)
    buffer))

(provide 'nextpage)
;;; nextpage.el ends here

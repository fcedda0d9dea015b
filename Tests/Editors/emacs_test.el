;;; emacs_test.el --- nextpage driven by Emacs's jsonrpc.el, as Eglot drives a server  -*- lexical-binding: t -*-

;; NEXTPAGE=/path/to/nextpage emacs --batch -Q -l Tests/Editors/emacs_test.el
;;
;; jsonrpc.el (built into Emacs 27 and later) is the transport of Eglot,
;; Emacs's LSP client.  The server process is made the way Eglot makes it
;; (a pipe, utf-8-emacs-unix, stderr to its own buffer) in a new empty
;; folder, so nextpage serves its built-in `demo' collection (250 items,
;; 10 pages).  The test opens like Eglot (initialize, initialized with {}),
;; asks `collections' with params null, pages the demo to its end, projects
;; items with `fields', reads a -32001 for an unknown collection, walks the
;; demo again with `loadAll' (its `page' and `$/progress' notifications), and
;; ends like `eglot-shutdown': `shutdown' then `exit', both sent by jsonrpc.el
;; with "params": null (checked on the wire: every string Emacs writes to the
;; process is recorded).  The process must then exit by itself with status 0.
;; Every wait is bounded; the first failed check is printed and Emacs exits 1.

(require 'cl-lib)
(require 'jsonrpc)

(defconst nextpage-test-timeout 20 "Seconds any one wait may take.")
(defconst nextpage-test-demo-items 250)
(defconst nextpage-test-demo-pages 10)

(define-error 'nextpage-test-failed "check failed")

(defun nextpage-test-check (condition format-string &rest args)
  "Signal `nextpage-test-failed' with FORMAT-STRING and ARGS unless CONDITION."
  (unless condition
    (signal 'nextpage-test-failed (list (apply #'format format-string args)))))

(defvar nextpage-test--process nil "The nextpage process under test.")
(defvar nextpage-test--wire nil "Every string Emacs sent to the process, newest first.")

(defun nextpage-test--record-wire (process string)
  "Keep STRING when it is sent to the process under test (PROCESS)."
  (when (eq process nextpage-test--process)
    (push string nextpage-test--wire)))

(defun nextpage-test--sent (method)
  "The one message Emacs sent for METHOD, as bytes on the wire: (HEADER . BODY)."
  (let ((found (cl-remove-if-not
                (lambda (string) (string-match-p (format "\"method\":\"%s\"" (regexp-quote method)) string))
                nextpage-test--wire)))
    (nextpage-test-check (= (length found) 1) "%d messages for %s on the wire, expected 1" (length found) method)
    (let* ((message (car found))
           (split (string-match "\r\n\r\n" message)))
      (nextpage-test-check split "no header end in %S" message)
      (cons (substring message 0 split) (substring message (+ split 4))))))

(defun nextpage-test--check-params-null (method)
  "Check that METHOD went out with \"params\": null and a right Content-Length."
  (pcase-let ((`(,header . ,body) (nextpage-test--sent method)))
    (nextpage-test-check (string-match-p "\"params\":null" body)
                         "%s went out without \"params\":null: %s" method body)
    (nextpage-test-check (equal header (format "Content-Length: %d" (string-bytes body)))
                         "%s: header %S for a body of %d bytes" method header (string-bytes body))
    body))

(defun nextpage-test--error-of (connection method params)
  "Send METHOD with PARAMS on CONNECTION, expecting an error: its (CODE MESSAGE DATA)."
  (condition-case failure
      (progn (jsonrpc-request connection method params :timeout nextpage-test-timeout)
             (nextpage-test-check nil "%s succeeded where an error was due" method))
    (jsonrpc-error
     (list (alist-get 'jsonrpc-error-code (cdr failure))
           (alist-get 'jsonrpc-error-message (cdr failure))
           (alist-get 'jsonrpc-error-data (cdr failure))))))

(defun nextpage-test-main ()
  "Run every check; return a one-line summary."
  (let* ((binary (getenv "NEXTPAGE"))
         (folder (make-temp-file "nextpage-emacs-" t))
         (notifications nil)
         (server-requests nil)
         (exit-status nil)
         (exit-kind nil)
         connection)
    (nextpage-test-check (and binary (file-executable-p binary)) "set NEXTPAGE to the nextpage binary (got %S)" binary)
    (advice-add 'process-send-string :before #'nextpage-test--record-wire)
    (setq connection
          (make-instance
           'jsonrpc-process-connection
           :name "nextpage"
           :events-buffer-scrollback-size 0
           :process (lambda ()
                      (let ((default-directory (file-name-as-directory folder)))
                        (setq nextpage-test--process
                              (make-process :name "nextpage"
                                            :command (list binary "--log-level" "warning")
                                            :connection-type 'pipe
                                            :coding 'utf-8-emacs-unix
                                            :noquery t
                                            :stderr (get-buffer-create "*nextpage stderr*")))))
           :notification-dispatcher (lambda (_conn method params)
                                      (push (cons method params) notifications))
           :request-dispatcher (lambda (_conn method _params)
                                 (push method server-requests)
                                 (jsonrpc-error :code -32601 :message "no requests expected"))
           :on-shutdown (lambda (conn)
                          (let ((process (jsonrpc--process conn)))
                            (setq exit-kind (process-status process)
                                  exit-status (process-exit-status process))))))
    (cl-flet ((call (method params)
                (jsonrpc-request connection method params :timeout nextpage-test-timeout)))
      ;; Eglot's opening.
      (let ((init (call :initialize `(:processId ,(emacs-pid)
                                      :clientInfo (:name "Eglot" :version ,emacs-version)
                                      :rootUri nil
                                      :capabilities (:workspace (:configuration t))))))
        (nextpage-test-check (equal (plist-get (plist-get init :serverInfo) :name) "nextpage")
                             "initialize: serverInfo %S" (plist-get init :serverInfo))
        (nextpage-test-check (seq-contains-p (plist-get (plist-get init :capabilities) :methods) "loadNext")
                             "initialize: capabilities.methods lacks loadNext"))
      (jsonrpc-notify connection :initialized (make-hash-table))
      ;; A method without params: jsonrpc.el sends "params": null.
      (let ((states (call :collections nil)))
        (nextpage-test-check (and (vectorp states) (= (length states) 1)
                                  (equal (plist-get (aref states 0) :collection) "demo"))
                             "collections: %S" states))
      (nextpage-test--check-params-null "collections")

      ;; Page the demo to its end with loadNext.
      (let ((ids nil) (pages 0) (done nil))
        (while (not done)
          (nextpage-test-check (< pages (+ nextpage-test-demo-pages 5)) "loadNext: still hasNext after %d pages" pages)
          (let ((page (call :loadNext '(:collection "demo"))))
            (cl-incf pages)
            (nextpage-test-check (equal (plist-get page :page) pages) "loadNext: page number %S where %d was due"
                                 (plist-get page :page) pages)
            (cl-loop for item across (plist-get page :items) do (push (plist-get item :id) ids))
            (nextpage-test-check (equal (plist-get page :count) (length ids)) "loadNext: count %S after %d items"
                                 (plist-get page :count) (length ids))
            (if (eq (plist-get page :hasNext) t)
                (nextpage-test-check (plist-get page :lastId) "loadNext: page %d has more but no lastId" pages)
              (nextpage-test-check (eq (plist-get page :hasNext) :json-false) "loadNext: hasNext %S" (plist-get page :hasNext))
              (nextpage-test-check (null (plist-get page :lastId)) "loadNext: the last page has lastId %S" (plist-get page :lastId))
              (setq done t))))
        (setq ids (nreverse ids))
        (nextpage-test-check (= pages nextpage-test-demo-pages) "loadNext: %d pages, expected %d" pages nextpage-test-demo-pages)
        (nextpage-test-check (equal ids (number-sequence 1 nextpage-test-demo-items))
                             "loadNext: ids are not 1..%d once each in order: %d ids, first %S"
                             nextpage-test-demo-items (length ids) (seq-take ids 5)))
      (let ((after-end (call :loadNext '(:collection "demo"))))
        (nextpage-test-check (and (equal (plist-get after-end :items) [])
                                  (eq (plist-get after-end :hasNext) :json-false))
                             "loadNext after the end: %S" after-end))

      ;; fields: each item projected to just its name.
      (let* ((slice (call :items '(:collection "demo" :offset 247 :limit 10 :fields ["/name"])))
             (items (plist-get slice :items)))
        (nextpage-test-check (= (length items) 3) "items offset 247: %d items, expected 3" (length items))
        (cl-loop for item across items for id from 248 do
                 (nextpage-test-check (and (= (length item) 2) (stringp (plist-get item :name))
                                           (string-suffix-p (format " %d" id) (plist-get item :name)))
                                      "items with fields: item %d is %S, not {name}" id item)))

      ;; An unknown collection: -32001 naming it; the demo is untouched.
      (pcase-let ((`(,code ,_message ,data) (nextpage-test--error-of connection :loadNext '(:collection "no-such-collection"))))
        (nextpage-test-check (eql code -32001) "unknown collection: code %S, expected -32001" code)
        (nextpage-test-check (equal (plist-get data :collection) "no-such-collection") "unknown collection: data %S" data)
        (nextpage-test-check (seq-contains-p (plist-get data :known) "demo") "unknown collection: data.known lacks demo: %S" data))
      (let ((state (call :status '(:collection "demo"))))
        (nextpage-test-check (and (eql (plist-get state :count) nextpage-test-demo-items)
                                  (eq (plist-get state :hasNext) :json-false))
                             "status after the error: %S" state))

      ;; loadAll from a fresh start: jsonrpc.el runs the notification
      ;; dispatcher for each message as it is read, so by the time the reply
      ;; returns every notification of the walk has been dispatched.
      (let ((fresh (call :reset '(:collection "demo"))))
        (nextpage-test-check (and (eql (plist-get fresh :count) 0) (eq (plist-get fresh :hasNext) t)) "reset: %S" fresh))
      (setq notifications nil)
      (let* ((all (call :loadAll '(:collection "demo" :progressToken "emacs-walk")))
             (received (reverse notifications))
             (pages (cl-loop for (method . params) in received when (eq method 'page) collect params))
             (progress (cl-loop for (method . params) in received when (eq method '$/progress) collect params))
             (walked 0))
        (nextpage-test-check (and (eql (plist-get all :pages) nextpage-test-demo-pages)
                                  (eql (plist-get all :count) nextpage-test-demo-items)
                                  (eq (plist-get all :hasNext) :json-false))
                             "loadAll: result %S" all)
        (nextpage-test-check (= (length received) (+ (length pages) (length progress)))
                             "loadAll: unexpected notifications %S" (mapcar #'car received))
        (nextpage-test-check (= (length pages) nextpage-test-demo-pages) "loadAll: %d page notifications, expected %d"
                             (length pages) nextpage-test-demo-pages)
        (cl-loop for page in pages for number from 1 do
                 (nextpage-test-check (and (equal (plist-get page :collection) "demo") (eql (plist-get page :page) number))
                                      "page notification %d: page %S" number (plist-get page :page))
                 (cl-loop for item across (plist-get page :items) do
                          (cl-incf walked)
                          (nextpage-test-check (eql (plist-get item :id) walked) "page notification %d: id %S where %d was due"
                                               number (plist-get item :id) walked))
                 (nextpage-test-check (eql (plist-get page :count) walked) "page notification %d: count %S" number (plist-get page :count)))
        (nextpage-test-check (= walked nextpage-test-demo-items) "loadAll: %d items in page notifications" walked)
        (nextpage-test-check (= (length progress) (+ nextpage-test-demo-pages 2))
                             "$/progress: %d notifications, expected begin + %d reports + end" (length progress) nextpage-test-demo-pages)
        (cl-loop for note in progress for index from 0
                 for value = (plist-get note :value)
                 for kind = (cond ((= index 0) "begin") ((= index (1- (length progress))) "end") (t "report"))
                 do (nextpage-test-check (and (equal (plist-get note :token) "emacs-walk")
                                              (equal (plist-get value :kind) kind)
                                              (eql (plist-get value :pages) (min index nextpage-test-demo-pages)))
                                         "$/progress %d: %S, expected kind %s" index note kind))

        ;; eglot-shutdown: shutdown, then exit, then the process ends by itself.
        (nextpage-test-check (null (jsonrpc-request connection :shutdown nil :timeout 1.5)) "shutdown: a non-null result")
        (jsonrpc-notify connection :exit nil)
        (let ((deadline (+ (float-time) nextpage-test-timeout)))
          (while (and (null exit-kind) (< (float-time) deadline))
            (accept-process-output nil 0.05)))
        (nextpage-test-check exit-kind "nextpage still runs %d s after shutdown + exit" nextpage-test-timeout)
        (nextpage-test-check (and (eq exit-kind 'exit) (eql exit-status 0))
                             "nextpage ended with %S %S, expected exit 0" exit-kind exit-status)
        (let ((shutdown (nextpage-test--check-params-null "shutdown"))
              (exit (nextpage-test--check-params-null "exit")))
          (nextpage-test-check (string-match-p "\\`{\"jsonrpc\":\"2.0\",\"id\":[0-9]+,\"method\":\"shutdown\",\"params\":null}\\'" shutdown)
                               "shutdown on the wire: %s" shutdown)
          (nextpage-test-check (equal exit "{\"jsonrpc\":\"2.0\",\"method\":\"exit\",\"params\":null}")
                               "exit on the wire: %s" exit)
          (jsonrpc-shutdown connection t)
          (nextpage-test-check (null server-requests) "the server sent requests: %S" server-requests)
          (delete-directory folder t)
          (format "emacs_test (Emacs %s, jsonrpc.el %s): paged %d items in %d pages; fields; -32001; loadAll: %d page + %d $/progress notifications; on the wire %s then %s; status %d"
                  emacs-version (nextpage-test--jsonrpc-version) nextpage-test-demo-items nextpage-test-demo-pages
                  (length pages) (length progress) shutdown exit exit-status))))))

(defun nextpage-test--jsonrpc-version ()
  "The version of the jsonrpc.el built into this Emacs."
  (let ((version (alist-get 'jsonrpc package--builtin-versions)))
    (if version (mapconcat #'number-to-string version ".") "?")))

(condition-case failure
    (progn
      (princ (concat (nextpage-test-main) "\n"))
      (kill-emacs 0))
  (nextpage-test-failed
   (message "emacs_test: FAILED: %s" (cadr failure))
   (kill-emacs 1))
  (error
   (message "emacs_test: FAILED with an error: %S" failure)
   (kill-emacs 1)))

;;; emacs_test.el ends here

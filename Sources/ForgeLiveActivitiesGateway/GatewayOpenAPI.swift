/// The gateway's OpenAPI 3.0 document, `GET /v1/openapi.json`: every route, request and answer,
/// errors included. Written by hand; the gateway's tests check every answer they get against it.
enum GatewayOpenAPI {
    static let document = #"""
{
  "components": {
    "responses": {
      "Accepted": {
        "content": {
          "application/json": {
            "schema": {
              "$ref": "#/components/schemas/Accepted"
            }
          }
        },
        "description": "Accepted: the activity's id and state."
      },
      "BadRequest": {
        "content": {
          "application/json": {
            "schema": {
              "$ref": "#/components/schemas/Error"
            }
          }
        },
        "description": "Bad input: an unknown field, a wrong type, a content state that is not an object, a bad id or group; nothing is stored."
      },
      "BodyTooLarge": {
        "content": {
          "application/json": {
            "schema": {
              "$ref": "#/components/schemas/Error"
            }
          }
        },
        "description": "The body is over the gateway's limit (code body_too_large)."
      },
      "GroupAccepted": {
        "content": {
          "application/json": {
            "schema": {
              "$ref": "#/components/schemas/GroupAccepted"
            }
          }
        },
        "description": "Accepted: recorded for every member, sent by the delivery loop; what it reached."
      },
      "NotFound": {
        "content": {
          "application/json": {
            "schema": {
              "$ref": "#/components/schemas/Error"
            }
          }
        },
        "description": "No activity has the id (code unknown_activity, field id)."
      },
      "Unauthorized": {
        "content": {
          "application/json": {
            "schema": {
              "$ref": "#/components/schemas/Error"
            }
          }
        },
        "description": "No or a wrong API key (when the gateway has one); the answer does not say which."
      },
      "Unavailable": {
        "content": {
          "application/json": {
            "schema": {
              "$ref": "#/components/schemas/Error"
            }
          }
        },
        "description": "The store failed (code store), or the manager has no client (no_client)."
      },
      "UnknownGroup": {
        "content": {
          "application/json": {
            "schema": {
              "$ref": "#/components/schemas/Error"
            }
          }
        },
        "description": "No activity belongs to the group (code unknown_activity, field group)."
      }
    },
    "schemas": {
      "Accepted": {
        "additionalProperties": false,
        "properties": {
          "id": {
            "type": "string"
          },
          "state": {
            "$ref": "#/components/schemas/State"
          }
        },
        "required": [
          "id",
          "state"
        ],
        "type": "object"
      },
      "Activity": {
        "additionalProperties": false,
        "properties": {
          "attributes_type": {
            "type": "string"
          },
          "bundle_id": {
            "type": "string"
          },
          "channel_id": {
            "description": "The broadcast channel it listens to (its group's, started on it), or null: its group's updates then reach it in one broadcast.",
            "nullable": true,
            "type": "string"
          },
          "group": {
            "description": "The group it belongs to, or null.",
            "nullable": true,
            "type": "string"
          },
          "id": {
            "type": "string"
          },
          "installation": {
            "nullable": true,
            "type": "string"
          },
          "started_at": {
            "format": "date-time",
            "type": "string"
          },
          "state": {
            "$ref": "#/components/schemas/State"
          },
          "update_token": {
            "nullable": true,
            "pattern": "^[0-9a-f]+$",
            "type": "string"
          },
          "why": {
            "nullable": true,
            "type": "string"
          }
        },
        "required": [
          "id",
          "state",
          "bundle_id",
          "attributes_type",
          "installation",
          "update_token",
          "started_at",
          "why",
          "group",
          "channel_id"
        ],
        "type": "object"
      },
      "ActivityDetail": {
        "additionalProperties": false,
        "properties": {
          "attributes_type": {
            "type": "string"
          },
          "bundle_id": {
            "type": "string"
          },
          "channel_id": {
            "description": "The broadcast channel it listens to (its group's, started on it), or null: its group's updates then reach it in one broadcast.",
            "nullable": true,
            "type": "string"
          },
          "content_state": {
            "description": "The last content state sent, or being sent.",
            "nullable": true,
            "type": "object"
          },
          "downgraded": {
            "description": "Alerting updates sent at priority 5: the activity's priority-10 budget was spent.",
            "minimum": 0,
            "type": "integer"
          },
          "failed": {
            "description": "Requested pushes APNs did not accept.",
            "minimum": 0,
            "type": "integer"
          },
          "group": {
            "description": "The group it belongs to, or null.",
            "nullable": true,
            "type": "string"
          },
          "held": {
            "enum": [
              "update",
              "end",
              null
            ],
            "nullable": true,
            "type": "string"
          },
          "history": {
            "items": {
              "additionalProperties": false,
              "properties": {
                "at": {
                  "format": "date-time",
                  "type": "string"
                },
                "detail": {
                  "type": "string"
                },
                "event": {
                  "type": "string"
                }
              },
              "required": [
                "at",
                "event",
                "detail"
              ],
              "type": "object"
            },
            "type": "array"
          },
          "id": {
            "type": "string"
          },
          "in_flight": {
            "description": "The kind of the push being sent (taken by a gateway, its verdict not in yet).",
            "enum": [
              "update",
              "end",
              "start",
              null
            ],
            "nullable": true,
            "type": "string"
          },
          "installation": {
            "nullable": true,
            "type": "string"
          },
          "may_have_been_delivered_twice": {
            "description": "Pushes sent again after another gateway stopped before their verdict: they may have been delivered twice.",
            "minimum": 0,
            "type": "integer"
          },
          "renewals": {
            "minimum": 0,
            "type": "integer"
          },
          "requested": {
            "description": "Updates and ends asked for through the gateway (or the manager's request API).",
            "minimum": 0,
            "type": "integer"
          },
          "sent": {
            "description": "Requested pushes APNs accepted.",
            "minimum": 0,
            "type": "integer"
          },
          "started_at": {
            "format": "date-time",
            "type": "string"
          },
          "state": {
            "$ref": "#/components/schemas/State"
          },
          "superseded": {
            "description": "Requested pushes replaced by a newer one before they were sent.",
            "minimum": 0,
            "type": "integer"
          },
          "update_token": {
            "nullable": true,
            "pattern": "^[0-9a-f]+$",
            "type": "string"
          },
          "waiting": {
            "description": "The kind of the push waiting to be sent: update, end, or a start deferred by the start budget.",
            "enum": [
              "update",
              "end",
              "start",
              null
            ],
            "nullable": true,
            "type": "string"
          },
          "why": {
            "nullable": true,
            "type": "string"
          }
        },
        "required": [
          "id",
          "state",
          "bundle_id",
          "attributes_type",
          "installation",
          "update_token",
          "started_at",
          "why",
          "group",
          "channel_id",
          "renewals",
          "held",
          "requested",
          "sent",
          "superseded",
          "downgraded",
          "failed",
          "waiting",
          "in_flight",
          "may_have_been_delivered_twice",
          "content_state",
          "history"
        ],
        "type": "object"
      },
      "EndRequest": {
        "additionalProperties": false,
        "properties": {
          "content_state": {
            "description": "The final content state; the last one sent when absent.",
            "type": "object"
          },
          "dismissal_date": {
            "description": "When it leaves the Lock Screen, in seconds since 1970 (a number; a string is refused with 400): 0 at once; iOS's default (up to 4 hours) when absent.",
            "minimum": 0,
            "type": "number"
          }
        },
        "type": "object"
      },
      "Error": {
        "additionalProperties": false,
        "properties": {
          "error": {
            "additionalProperties": false,
            "properties": {
              "apns": {
                "additionalProperties": false,
                "description": "502: APNs' answer (both null when none came).",
                "properties": {
                  "reason": {
                    "nullable": true,
                    "type": "string"
                  },
                  "status": {
                    "nullable": true,
                    "type": "integer"
                  }
                },
                "required": [
                  "status",
                  "reason"
                ],
                "type": "object"
              },
              "code": {
                "description": "invalid_input, unknown_activity, not_live, no_push_to_start_token, send_failed, store, no_client, unauthorized, body_too_large, not_found, method_not_allowed",
                "type": "string"
              },
              "field": {
                "description": "The field, path parameter or query parameter at fault (id, group, body, content_state, alert.title, state, …).",
                "type": "string"
              },
              "rule": {
                "description": "The rule broken, or the state met, in words.",
                "type": "string"
              },
              "state": {
                "description": "409: the activity's state.",
                "enum": [
                  "starting",
                  "active",
                  "stale",
                  "ending",
                  "ended",
                  "dead"
                ],
                "type": "string"
              },
              "why": {
                "description": "409: why it ended or died.",
                "nullable": true,
                "type": "string"
              }
            },
            "required": [
              "code",
              "rule"
            ],
            "type": "object"
          }
        },
        "required": [
          "error"
        ],
        "type": "object"
      },
      "Group": {
        "additionalProperties": false,
        "properties": {
          "channels": {
            "description": "Its broadcast channels, one per app.",
            "items": {
              "$ref": "#/components/schemas/GroupChannel"
            },
            "type": "array"
          },
          "id": {
            "type": "string"
          },
          "members": {
            "additionalProperties": false,
            "properties": {
              "by_state": {
                "additionalProperties": false,
                "description": "The members in each state (every state, 0 included).",
                "properties": {
                  "active": {
                    "minimum": 0,
                    "type": "integer"
                  },
                  "dead": {
                    "minimum": 0,
                    "type": "integer"
                  },
                  "ended": {
                    "minimum": 0,
                    "type": "integer"
                  },
                  "ending": {
                    "minimum": 0,
                    "type": "integer"
                  },
                  "stale": {
                    "minimum": 0,
                    "type": "integer"
                  },
                  "starting": {
                    "minimum": 0,
                    "type": "integer"
                  }
                },
                "required": [
                  "starting",
                  "active",
                  "stale",
                  "ending",
                  "ended",
                  "dead"
                ],
                "type": "object"
              },
              "total": {
                "minimum": 0,
                "type": "integer"
              }
            },
            "required": [
              "total",
              "by_state"
            ],
            "type": "object"
          }
        },
        "required": [
          "id",
          "members",
          "channels"
        ],
        "type": "object"
      },
      "GroupAccepted": {
        "additionalProperties": false,
        "properties": {
          "channels": {
            "description": "Broadcast channels that get one broadcast.",
            "minimum": 0,
            "type": "integer"
          },
          "id": {
            "description": "The group.",
            "type": "string"
          },
          "members": {
            "description": "Members that get the push through their own token (each paced and coalesced as one activity's update).",
            "minimum": 0,
            "type": "integer"
          },
          "on_channels": {
            "description": "Live members reached through those channels.",
            "minimum": 0,
            "type": "integer"
          },
          "skipped": {
            "description": "Members left alone: ended, dead, or with an end already waiting.",
            "minimum": 0,
            "type": "integer"
          },
          "state": {
            "enum": [
              "accepted"
            ],
            "type": "string"
          },
          "superseded": {
            "description": "Members and channels whose waiting push this request replaced.",
            "minimum": 0,
            "type": "integer"
          }
        },
        "required": [
          "id",
          "state",
          "members",
          "channels",
          "on_channels",
          "superseded",
          "skipped"
        ],
        "type": "object"
      },
      "GroupChannel": {
        "additionalProperties": false,
        "properties": {
          "backoff_until": {
            "description": "After a 429: no broadcast goes before this date; null otherwise.",
            "format": "date-time",
            "nullable": true,
            "type": "string"
          },
          "bundle_id": {
            "type": "string"
          },
          "channel_id": {
            "description": "APNs' id of the channel; null while it is being created.",
            "nullable": true,
            "type": "string"
          },
          "failed": {
            "description": "Broadcasts APNs did not accept, or given up.",
            "minimum": 0,
            "type": "integer"
          },
          "in_flight": {
            "description": "Whether a broadcast is being sent.",
            "type": "boolean"
          },
          "phase": {
            "description": "creating: its create was sent; open: broadcasts go to it; closing: the group's end went, it is deleted next; deleted.",
            "enum": [
              "creating",
              "open",
              "closing",
              "deleted"
            ],
            "type": "string"
          },
          "requested": {
            "description": "Broadcasts asked for (group updates and ends).",
            "minimum": 0,
            "type": "integer"
          },
          "sent": {
            "description": "Broadcasts APNs accepted.",
            "minimum": 0,
            "type": "integer"
          },
          "superseded": {
            "description": "Broadcasts replaced by a newer one before they were sent.",
            "minimum": 0,
            "type": "integer"
          },
          "throttled": {
            "description": "Broadcasts APNs answered with 429: the channel then waits on its own.",
            "minimum": 0,
            "type": "integer"
          },
          "waiting": {
            "description": "Whether a broadcast waits to be sent.",
            "type": "boolean"
          }
        },
        "required": [
          "bundle_id",
          "channel_id",
          "phase",
          "requested",
          "sent",
          "superseded",
          "failed",
          "throttled",
          "waiting",
          "in_flight",
          "backoff_until"
        ],
        "type": "object"
      },
      "Ready": {
        "additionalProperties": false,
        "properties": {
          "ready": {
            "enum": [
              true
            ],
            "type": "boolean"
          }
        },
        "required": [
          "ready"
        ],
        "type": "object"
      },
      "Report": {
        "description": "The app's token report: push_to_start_token needs installation, bundle_id, attributes_type and token; update_token needs activity and token (bundle_id and attributes_type register an activity the app started itself); ended needs activity.",
        "properties": {
          "activity": {
            "type": "string"
          },
          "attributes_type": {
            "type": "string"
          },
          "bundle_id": {
            "type": "string"
          },
          "channels": {
            "description": "push_to_start_token only: the app can start an activity on a broadcast channel (iOS 18 and a build that handles input-push-channel); a start in a group then puts it on the group's channel.",
            "type": "boolean"
          },
          "environment": {
            "enum": [
              "sandbox",
              "production"
            ],
            "type": "string"
          },
          "group": {
            "description": "update_token registering an activity the app started itself: the group it joins (1 to 64 bytes).",
            "type": "string"
          },
          "installation": {
            "type": "string"
          },
          "kind": {
            "enum": [
              "push_to_start_token",
              "update_token",
              "ended"
            ],
            "type": "string"
          },
          "sequence": {
            "description": "Increases with each report (or the report's time in ms): an older one than applied is refused (400, field sequence).",
            "minimum": 0,
            "type": "integer"
          },
          "token": {
            "type": "string"
          }
        },
        "required": [
          "kind"
        ],
        "type": "object"
      },
      "ReportAnswer": {
        "additionalProperties": false,
        "properties": {
          "applied": {
            "type": "boolean"
          },
          "error": {
            "additionalProperties": false,
            "properties": {
              "code": {
                "type": "string"
              },
              "field": {
                "type": "string"
              },
              "rule": {
                "type": "string"
              }
            },
            "required": [
              "code",
              "rule"
            ],
            "type": "object"
          },
          "why": {
            "description": "Why it changed nothing, when it did not.",
            "type": "string"
          }
        },
        "required": [
          "applied"
        ],
        "type": "object"
      },
      "StartRequest": {
        "additionalProperties": false,
        "properties": {
          "alert": {
            "additionalProperties": false,
            "properties": {
              "body": {
                "type": "string"
              },
              "title": {
                "type": "string"
              }
            },
            "required": [
              "title"
            ],
            "type": "object"
          },
          "attributes": {
            "type": "object"
          },
          "attributes_type": {
            "description": "The Swift type of the activity's attributes.",
            "type": "string"
          },
          "bundle_id": {
            "type": "string"
          },
          "content_state": {
            "type": "object"
          },
          "group": {
            "description": "The group it joins (1 to 64 bytes of UTF-8 without control characters; 400 naming group otherwise): it gets every update and the end of POST /v1/groups/{group}/update and /end. When its install reported \"channels\": true, it is started on the group's broadcast channel for its app (made with the first such start).",
            "maxLength": 64,
            "minLength": 1,
            "type": "string"
          },
          "installation": {
            "description": "Your id of the app install whose push-to-start token starts it.",
            "type": "string"
          }
        },
        "required": [
          "installation",
          "bundle_id",
          "attributes_type",
          "attributes",
          "content_state",
          "alert"
        ],
        "type": "object"
      },
      "State": {
        "enum": [
          "starting",
          "active",
          "stale",
          "ending",
          "ended",
          "dead"
        ],
        "type": "string"
      },
      "UpdateRequest": {
        "additionalProperties": false,
        "properties": {
          "content_state": {
            "type": "object"
          },
          "importance": {
            "default": "routine",
            "description": "routine: apns-priority 5 (delivered opportunistically, not counted against the activity's budget); alerting: 10 while the activity's priority-10 budget allows, else 5 (counted as downgraded). The update is paced: at most one a second per activity, a newer state replacing one still waiting.",
            "enum": [
              "routine",
              "alerting"
            ],
            "type": "string"
          }
        },
        "required": [
          "content_state"
        ],
        "type": "object"
      }
    },
    "securitySchemes": {
      "apiKey": {
        "scheme": "bearer",
        "type": "http"
      }
    }
  },
  "info": {
    "description": "LiveActivityManager over HTTP/1.1 and JSON: the app's token reports, start, update and end of Live Activities, alone or as a group, and the registry. With an API key, every route but /readyz needs Authorization: Bearer KEY.",
    "title": "ForgePush Live Activity gateway",
    "version": "1"
  },
  "openapi": "3.0.3",
  "paths": {
    "/metrics": {
      "get": {
        "responses": {
          "200": {
            "content": {
              "text/plain": {
                "schema": {
                  "type": "string"
                }
              }
            },
            "description": "The metrics."
          },
          "401": {
            "$ref": "#/components/responses/Unauthorized"
          },
          "404": {
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Error"
                }
              }
            },
            "description": "This gateway exports no metrics."
          },
          "503": {
            "$ref": "#/components/responses/Unavailable"
          }
        },
        "security": [
          {
            "apiKey": []
          },
          {}
        ],
        "summary": "Prometheus text: forge_gateway_requests_total{route,status}, forge_gateway_activities{state} (read at the scrape)."
      }
    },
    "/readyz": {
      "get": {
        "responses": {
          "200": {
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Ready"
                }
              }
            },
            "description": "Ready."
          },
          "503": {
            "$ref": "#/components/responses/Unavailable"
          }
        },
        "security": [],
        "summary": "Ready when the store answers; needs no API key."
      }
    },
    "/v1/activities": {
      "get": {
        "parameters": [
          {
            "in": "query",
            "name": "state",
            "required": false,
            "schema": {
              "$ref": "#/components/schemas/State"
            }
          },
          {
            "description": "Only the activities of this group (1 to 64 bytes; 400 naming group otherwise); with state, those of the group in that state.",
            "in": "query",
            "name": "group",
            "required": false,
            "schema": {
              "maxLength": 64,
              "minLength": 1,
              "type": "string"
            }
          }
        ],
        "responses": {
          "200": {
            "content": {
              "application/json": {
                "schema": {
                  "items": {
                    "$ref": "#/components/schemas/Activity"
                  },
                  "type": "array"
                }
              }
            },
            "description": "The activities."
          },
          "400": {
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Error"
                }
              }
            },
            "description": "An unknown state, group, or another parameter (named in field)."
          },
          "401": {
            "$ref": "#/components/responses/Unauthorized"
          },
          "503": {
            "$ref": "#/components/responses/Unavailable"
          }
        },
        "security": [
          {
            "apiKey": []
          },
          {}
        ],
        "summary": "The activities in the registry, in id order; ?state= and ?group= filter them."
      }
    },
    "/v1/activities/{id}": {
      "get": {
        "parameters": [
          {
            "description": "Your id of the activity: 1 to 64 bytes of UTF-8 without control characters (400 naming id otherwise).",
            "in": "path",
            "name": "id",
            "required": true,
            "schema": {
              "minLength": 1,
              "type": "string"
            }
          }
        ],
        "responses": {
          "200": {
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/ActivityDetail"
                }
              }
            },
            "description": "The activity."
          },
          "400": {
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Error"
                }
              }
            },
            "description": "A bad id."
          },
          "401": {
            "$ref": "#/components/responses/Unauthorized"
          },
          "404": {
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Error"
                }
              }
            },
            "description": "No activity has the id."
          },
          "503": {
            "$ref": "#/components/responses/Unavailable"
          }
        },
        "security": [
          {
            "apiKey": []
          },
          {}
        ],
        "summary": "One activity and its history."
      }
    },
    "/v1/activities/{id}/end": {
      "post": {
        "parameters": [
          {
            "description": "Your id of the activity: 1 to 64 bytes of UTF-8 without control characters (400 naming id otherwise).",
            "in": "path",
            "name": "id",
            "required": true,
            "schema": {
              "minLength": 1,
              "type": "string"
            }
          }
        ],
        "requestBody": {
          "content": {
            "application/json": {
              "schema": {
                "$ref": "#/components/schemas/EndRequest"
              }
            }
          },
          "required": true
        },
        "responses": {
          "202": {
            "$ref": "#/components/responses/Accepted"
          },
          "400": {
            "$ref": "#/components/responses/BadRequest"
          },
          "401": {
            "$ref": "#/components/responses/Unauthorized"
          },
          "404": {
            "$ref": "#/components/responses/NotFound"
          },
          "409": {
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Error"
                }
              }
            },
            "description": "The activity has ended or is dead (code not_live, with state and why); nothing was sent."
          },
          "413": {
            "$ref": "#/components/responses/BodyTooLarge"
          },
          "503": {
            "$ref": "#/components/responses/Unavailable"
          }
        },
        "security": [
          {
            "apiKey": []
          },
          {}
        ],
        "summary": "End a running activity (held until its update token arrives)."
      }
    },
    "/v1/activities/{id}/start": {
      "post": {
        "parameters": [
          {
            "description": "Your id of the activity: 1 to 64 bytes of UTF-8 without control characters (400 naming id otherwise).",
            "in": "path",
            "name": "id",
            "required": true,
            "schema": {
              "minLength": 1,
              "type": "string"
            }
          }
        ],
        "requestBody": {
          "content": {
            "application/json": {
              "schema": {
                "$ref": "#/components/schemas/StartRequest"
              }
            }
          },
          "required": true
        },
        "responses": {
          "202": {
            "$ref": "#/components/responses/Accepted"
          },
          "400": {
            "$ref": "#/components/responses/BadRequest"
          },
          "401": {
            "$ref": "#/components/responses/Unauthorized"
          },
          "404": {
            "$ref": "#/components/responses/NotFound"
          },
          "409": {
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Error"
                }
              }
            },
            "description": "The id exists and has ended or is dead (code not_live, with state and why), its group has ended (not_live, field group), or no usable push-to-start token (no_push_to_start_token)."
          },
          "413": {
            "$ref": "#/components/responses/BodyTooLarge"
          },
          "502": {
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Error"
                }
              }
            },
            "description": "APNs did not accept the push (code send_failed; apns has its status and reason); a dead token makes the activity dead."
          },
          "503": {
            "$ref": "#/components/responses/Unavailable"
          }
        },
        "security": [
          {
            "apiKey": []
          },
          {}
        ],
        "summary": "Start a Live Activity through the install's push-to-start token (the id is its apns-collapse-id); an id already running is answered with its state and not started twice."
      }
    },
    "/v1/activities/{id}/update": {
      "post": {
        "parameters": [
          {
            "description": "Your id of the activity: 1 to 64 bytes of UTF-8 without control characters (400 naming id otherwise).",
            "in": "path",
            "name": "id",
            "required": true,
            "schema": {
              "minLength": 1,
              "type": "string"
            }
          }
        ],
        "requestBody": {
          "content": {
            "application/json": {
              "schema": {
                "$ref": "#/components/schemas/UpdateRequest"
              }
            }
          },
          "required": true
        },
        "responses": {
          "202": {
            "$ref": "#/components/responses/Accepted"
          },
          "400": {
            "$ref": "#/components/responses/BadRequest"
          },
          "401": {
            "$ref": "#/components/responses/Unauthorized"
          },
          "404": {
            "$ref": "#/components/responses/NotFound"
          },
          "409": {
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Error"
                }
              }
            },
            "description": "The activity has ended, is ending or is dead (code not_live, with state and why); nothing was sent."
          },
          "413": {
            "$ref": "#/components/responses/BodyTooLarge"
          },
          "503": {
            "$ref": "#/components/responses/Unavailable"
          }
        },
        "security": [
          {
            "apiKey": []
          },
          {}
        ],
        "summary": "Send a new content state to a running activity (held until its update token arrives)."
      }
    },
    "/v1/groups/{group}": {
      "get": {
        "parameters": [
          {
            "description": "Your id of the group: 1 to 64 bytes of UTF-8 without control characters (400 naming group otherwise).",
            "in": "path",
            "name": "group",
            "required": true,
            "schema": {
              "minLength": 1,
              "type": "string"
            }
          }
        ],
        "responses": {
          "200": {
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Group"
                }
              }
            },
            "description": "The group: its members by state and its channels."
          },
          "400": {
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Error"
                }
              }
            },
            "description": "A bad group id, or a query parameter."
          },
          "401": {
            "$ref": "#/components/responses/Unauthorized"
          },
          "404": {
            "$ref": "#/components/responses/UnknownGroup"
          },
          "503": {
            "$ref": "#/components/responses/Unavailable"
          }
        },
        "security": [
          {
            "apiKey": []
          },
          {}
        ],
        "summary": "A group: how many members in each state, and its broadcast channels with their counts and pacing."
      }
    },
    "/v1/groups/{group}/end": {
      "post": {
        "parameters": [
          {
            "description": "Your id of the group: 1 to 64 bytes of UTF-8 without control characters (400 naming group otherwise).",
            "in": "path",
            "name": "group",
            "required": true,
            "schema": {
              "minLength": 1,
              "type": "string"
            }
          }
        ],
        "requestBody": {
          "content": {
            "application/json": {
              "schema": {
                "$ref": "#/components/schemas/EndRequest"
              }
            }
          },
          "required": true
        },
        "responses": {
          "202": {
            "$ref": "#/components/responses/GroupAccepted"
          },
          "400": {
            "$ref": "#/components/responses/BadRequest"
          },
          "401": {
            "$ref": "#/components/responses/Unauthorized"
          },
          "404": {
            "$ref": "#/components/responses/UnknownGroup"
          },
          "413": {
            "$ref": "#/components/responses/BodyTooLarge"
          },
          "503": {
            "$ref": "#/components/responses/Unavailable"
          }
        },
        "security": [
          {
            "apiKey": []
          },
          {}
        ],
        "summary": "End every member of the group: an end broadcast to each open channel (deleted once it went), and an end through its token to each other live member (never dropped)."
      }
    },
    "/v1/groups/{group}/update": {
      "post": {
        "parameters": [
          {
            "description": "Your id of the group: 1 to 64 bytes of UTF-8 without control characters (400 naming group otherwise).",
            "in": "path",
            "name": "group",
            "required": true,
            "schema": {
              "minLength": 1,
              "type": "string"
            }
          }
        ],
        "requestBody": {
          "content": {
            "application/json": {
              "schema": {
                "$ref": "#/components/schemas/UpdateRequest"
              }
            }
          },
          "required": true
        },
        "responses": {
          "202": {
            "$ref": "#/components/responses/GroupAccepted"
          },
          "400": {
            "$ref": "#/components/responses/BadRequest"
          },
          "401": {
            "$ref": "#/components/responses/Unauthorized"
          },
          "404": {
            "$ref": "#/components/responses/UnknownGroup"
          },
          "413": {
            "$ref": "#/components/responses/BodyTooLarge"
          },
          "503": {
            "$ref": "#/components/responses/Unavailable"
          }
        },
        "security": [
          {
            "apiKey": []
          },
          {}
        ],
        "summary": "Send a new content state to every member of the group: one broadcast to each open channel of the group, and an update through its own token to each other live member, each paced and coalesced as an activity's update (held for a member until its update token arrives)."
      }
    },
    "/v1/openapi.json": {
      "get": {
        "responses": {
          "200": {
            "content": {
              "application/json": {
                "schema": {
                  "type": "object"
                }
              }
            },
            "description": "The OpenAPI 3.0 document."
          },
          "401": {
            "$ref": "#/components/responses/Unauthorized"
          }
        },
        "security": [
          {
            "apiKey": []
          },
          {}
        ],
        "summary": "This document."
      }
    },
    "/v1/reports": {
      "post": {
        "requestBody": {
          "content": {
            "application/json": {
              "schema": {
                "$ref": "#/components/schemas/Report"
              }
            }
          },
          "required": true
        },
        "responses": {
          "200": {
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/ReportAnswer"
                }
              }
            },
            "description": "Applied, or not (why says why: a late report, an ended activity)."
          },
          "400": {
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/ReportAnswer"
                }
              }
            },
            "description": "A malformed report, or a sequence older than one applied; nothing changed."
          },
          "401": {
            "$ref": "#/components/responses/Unauthorized"
          },
          "404": {
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/ReportAnswer"
                }
              }
            },
            "description": "An update token or end of an unknown activity."
          },
          "413": {
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/Error"
                }
              }
            },
            "description": "The body is over the gateway's limit."
          },
          "500": {
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/ReportAnswer"
                }
              }
            },
            "description": "The report was applied, but a push it released (an update held for this token) failed otherwise (code send_failed); the report may be posted again."
          },
          "503": {
            "content": {
              "application/json": {
                "schema": {
                  "$ref": "#/components/schemas/ReportAnswer"
                }
              }
            },
            "description": "The store failed (code store): nothing was applied; post the report again."
          }
        },
        "security": [
          {
            "apiKey": []
          },
          {}
        ],
        "summary": "Apply a token report of the app."
      }
    }
  }
}
"""#
}
